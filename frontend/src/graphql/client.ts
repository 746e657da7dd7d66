import { Client, cacheExchange, fetchExchange, mapExchange, subscriptionExchange, type CombinedError } from "urql";
import { createClient as createWsClient, type Client as WsClient } from "graphql-ws";

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

/** The websocket client: the session cookie signs it in; it reconnects forever, with backoff. */
export function createWebsocket(url: string = websocketUrl()): WsClient {
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
        forwardSubscription(request) {
          const input = { ...request, query: request.query || "" };
          return {
            subscribe(sink) {
              const dispose = ws.subscribe(input, sink);
              return { unsubscribe: dispose };
            },
          };
        },
      }),
    ],
  });
}
