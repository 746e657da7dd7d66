import { Client, cacheExchange, fetchExchange, mapExchange, subscriptionExchange, type CombinedError } from "urql";
import type { DocumentNode } from "graphql";
import { createClient as createWsClient, type Client as WsClient, type ClientOptions, type FormattedExecutionResult, type Sink, type SubscribePayload } from "graphql-ws";

/** Whether the live-status websocket is up; the banner shows while it is lost. */
export type Connection = "connecting" | "connected" | "lost";

type Listener = (state: Connection) => void;

class ConnectionState {
  private state: Connection = "connecting";
  private listeners = new Set<Listener>();
  get current(): Connection {
    return this.state;
  }
  set(next: Connection): void {
    if (next === this.state) return;
    this.state = next;
    for (const listener of this.listeners) listener(next);
  }
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

export const connection = new ConnectionState();

function websocketUrl(): string {
  const { protocol, host } = window.location;
  return `${protocol === "https:" ? "wss:" : "ws:"}//${host}/graphql`;
}

/** The websocket client: the session cookie signs it in; it reconnects forever, with backoff.
 * (`options`: tests give their own socket and waits.) */
export function createWebsocket(url: string = websocketUrl(), options: Partial<ClientOptions> = {}): WsClient {
  return createWsClient({
    url,
    lazy: true,
    keepAlive: 15_000,
    retryAttempts: Number.POSITIVE_INFINITY,
    shouldRetry: () => true,
    retryWait: async (retries) => {
      await new Promise((resolve) => setTimeout(resolve, Math.min(500 * 2 ** retries, 10_000)));
    },
    on: {
      connected: () => connection.set("connected"),
      // Lazy: with no subscription left the client closes the socket itself (1000, Normal
      // Closure); that is not a lost connection.
      closed: (event) => connection.set((event as CloseEvent | undefined)?.code === 1000 ? "connecting" : "lost"),
      error: () => connection.set("lost"),
    },
    ...options,
  });
}

/** Whether a subscription resumes: it declares an `$after` variable (the status subscriptions'
 * cursor). */
export function declaresAfter(query: DocumentNode | undefined): boolean {
  return Boolean(
    query?.definitions.some(
      (definition) =>
        definition.kind === "OperationDefinition" &&
        definition.operation === "subscription" &&
        definition.variableDefinitions?.some((variable) => variable.variable.name.value === "after"),
    ),
  );
}

/** The `cursor` of a status event (the one root field of a subscription's result), if it has one.
 * Events of instances shared from another project carry none: they leave the cursor as it was. */
export function cursorOf(result: { data?: unknown }): string | null {
  const data = result.data;
  if (typeof data !== "object" || data === null) return null;
  for (const value of Object.values(data as Record<string, unknown>)) {
    const cursor = (value as { cursor?: unknown } | null)?.cursor;
    if (typeof cursor === "string") return cursor;
  }
  return null;
}

/** Subscribes through graphql-ws, resuming where it was. graphql-ws subscribes again by itself
 * after every reconnect, sending the payload it was given once more: here the payload's
 * `variables` are read at that moment, so a subscription that declares `$after` sends the cursor
 * of the last event it received, and the server replays what happened while the socket was down
 * (source REPLAY) instead of starting over. Before its first event it sends the `after` it was
 * given (none: a snapshot). */
export function subscribeResuming<Data, Extensions>(
  ws: Pick<WsClient, "subscribe">,
  request: { query: string; operationName?: string | null; variables?: Record<string, unknown> | null; extensions?: Record<string, unknown> | null },
  resumes: boolean,
  sink: Sink<FormattedExecutionResult<Data, Extensions>>,
): () => void {
  const given = request.variables ?? {};
  let cursor: string | null = null;
  const payload: SubscribePayload = {
    query: request.query,
    operationName: request.operationName ?? undefined,
    extensions: request.extensions ?? undefined,
    get variables() {
      return resumes && cursor !== null ? { ...given, after: cursor } : given;
    },
  };
  return ws.subscribe<Data, Extensions>(payload, {
    next(result) {
      if (resumes) cursor = cursorOf(result) ?? cursor;
      sink.next(result);
    },
    error: (error) => sink.error(error),
    complete: () => sink.complete(),
  });
}

/** Whether the server no longer knows the caller: their session ended (signed out elsewhere,
 * disabled or deleted by a platform admin, the password reset). */
export function signedOut(error: CombinedError): boolean {
  return error.graphQLErrors.some((e) => (e.extensions as { code?: unknown } | undefined)?.code === "UNAUTHENTICATED");
}

let leaving = false;

/** Leaves the page for `url` with a full load (which drops every cached answer and the signed-in
 * websocket); once leaving, later calls do nothing, so a refusal that arrives while signing out
 * does not send the page elsewhere. */
export function leaveFor(url: string, location: Pick<Location, "assign"> = window.location): void {
  if (leaving) return;
  leaving = true;
  location.assign(url);
}

/** Back to the sign-in page, coming back here afterwards. */
export function toSignIn(location: Pick<Location, "pathname" | "search" | "assign"> = window.location): void {
  if (location.pathname === "/login") return;
  leaveFor(`/login?next=${encodeURIComponent(location.pathname + location.search)}`, location);
}

/** The GraphQL client: queries and mutations over HTTP (same origin, the session cookie), live
 * status over graphql-transport-ws. Documents are cached and refetched with cache-and-network where
 * pages ask for it; mutations invalidate the cached results of the types they return. */
export function createGraphqlClient(ws: WsClient = createWebsocket()): Client {
  return new Client({
    url: "/graphql",
    fetchOptions: { credentials: "same-origin", headers: { "content-type": "application/json" } },
    exchanges: [
      // A request refused as UNAUTHENTICATED while the page thinks it is signed in: the session
      // stopped working, so the page signs out instead of showing errors everywhere.
      mapExchange({
        onError(error) {
          if (signedOut(error)) toSignIn();
        },
      }),
      cacheExchange,
      fetchExchange,
      subscriptionExchange({
        forwardSubscription(request, operation) {
          const input = { ...request, query: request.query || "" };
          const resumes = declaresAfter(operation.query);
          return {
            subscribe(sink) {
              const dispose = subscribeResuming(ws, input, resumes, sink);
              return { unsubscribe: dispose };
            },
          };
        },
      }),
    ],
  });
}
