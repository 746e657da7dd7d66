import { CombinedError } from "urql";
import { GraphQLError, parse } from "graphql";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { pipe, subscribe } from "wonka";

// The module remembers that the page is leaving: each test loads it afresh.
async function load() {
  return await import("./client");
}

describe("a session that stopped working", () => {
  beforeEach(() => {
    vi.resetModules();
  });

  it("is an UNAUTHENTICATED error, not any refusal", async () => {
    const { signedOut } = await load();
    const unauthenticated = new CombinedError({ graphQLErrors: [new GraphQLError("Sign in first", { extensions: { code: "UNAUTHENTICATED" } })] });
    const forbidden = new CombinedError({ graphQLErrors: [new GraphQLError("No", { extensions: { code: "FORBIDDEN" } })] });
    const network = new CombinedError({ networkError: new Error("offline") });
    expect(signedOut(unauthenticated)).toBe(true);
    expect(signedOut(forbidden)).toBe(false);
    expect(signedOut(network)).toBe(false);
  });

  it("sends the page to sign in, coming back afterwards", async () => {
    const { toSignIn } = await load();
    const assign = vi.fn();
    toSignIn({ pathname: "/p/ml/account", search: "?tab=1", assign });
    expect(assign.mock.calls).toEqual([["/login?next=%2Fp%2Fml%2Faccount%3Ftab%3D1"]]);
  });

  it("never from the sign-in page itself", async () => {
    const { toSignIn } = await load();
    const assign = vi.fn();
    toSignIn({ pathname: "/login", search: "", assign });
    expect(assign).not.toHaveBeenCalled();
  });

  it("leaves once: a refusal arriving while the page already leaves (signing out) changes nothing", async () => {
    const { leaveFor, toSignIn } = await load();
    const assign = vi.fn();
    leaveFor("/login", { assign });
    toSignIn({ pathname: "/p/ml/dashboard", search: "", assign });
    expect(assign.mock.calls).toEqual([["/login"]]);
  });
});

/** A websocket whose far end is this test: it acknowledges `connection_init`, records what the
 * client sends, delivers what the test gives and drops like a server that died. */
class FakeSocket {
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  static readonly CLOSING = 2;
  static readonly CLOSED = 3;
  static opened: FakeSocket[] = [];
  readyState = FakeSocket.CONNECTING;
  sent: { id?: string; type: string; payload?: { variables?: Record<string, unknown> } }[] = [];
  onopen: (() => void) | null = null;
  onclose: ((event: { code: number; reason: string; wasClean: boolean }) => void) | null = null;
  onerror: ((event: unknown) => void) | null = null;
  onmessage: ((event: { data: string }) => void) | null = null;

  constructor(
    readonly url: string,
    readonly protocol: string,
  ) {
    FakeSocket.opened.push(this);
    setTimeout(() => {
      this.readyState = FakeSocket.OPEN;
      this.onopen?.();
    });
  }

  send(data: string): void {
    const message = JSON.parse(data) as FakeSocket["sent"][number];
    this.sent.push(message);
    if (message.type === "connection_init") this.deliver({ type: "connection_ack" });
  }

  deliver(message: unknown): void {
    this.onmessage?.({ data: JSON.stringify(message) });
  }

  close(code = 1000, reason = ""): void {
    if (this.readyState === FakeSocket.CLOSED) return;
    this.readyState = FakeSocket.CLOSED;
    setTimeout(() => this.onclose?.({ code, reason, wasClean: code === 1000 }));
  }

  /** The server went away (killed): no close frame. */
  drop(): void {
    this.readyState = FakeSocket.CLOSED;
    this.onclose?.({ code: 1006, reason: "", wasClean: false });
  }

  subscribed(): { id: string; variables: Record<string, unknown> }[] {
    return this.sent.filter((m) => m.type === "subscribe").map((m) => ({ id: m.id ?? "", variables: m.payload?.variables ?? {} }));
  }
}

const EVENTS = parse(`
  subscription Events($project: String!, $after: String) {
    computeInstanceEvents(project: $project, after: $after) { status cursor source }
  }
`);
const NO_CURSOR = parse(`
  subscription Plain($id: ID!) {
    computeInstanceStatus(id: $id) { status cursor source }
  }
`);

function event(status: string, cursor: string | null, source: string) {
  return { data: { computeInstanceEvents: { status, cursor, source } } };
}

describe("live status after the websocket drops", () => {
  beforeEach(() => {
    vi.resetModules();
    FakeSocket.opened = [];
  });

  async function connected() {
    const { createGraphqlClient, createWebsocket } = await load();
    const ws = createWebsocket("ws://studio.test/graphql", {
      webSocketImpl: FakeSocket,
      retryWait: async () => {},
      keepAlive: 0,
    });
    return createGraphqlClient(ws);
  }

  it("subscribes again with the cursor of the last event it received, and passes on what is replayed, in order", async () => {
    const client = await connected();
    const received: unknown[] = [];
    const { unsubscribe } = pipe(
      client.subscription(EVENTS, { project: "ml" }),
      subscribe((result) => received.push(result.data)),
    );
    const first = await vi.waitFor(() => {
      const [subscription] = FakeSocket.opened[0]?.subscribed() ?? [];
      expect(subscription).toBeDefined();
      return subscription;
    });
    // The first time: no cursor, so the server starts with a snapshot.
    expect(first.variables).toEqual({ project: "ml" });
    const socket = FakeSocket.opened[0];
    socket.deliver({ id: first.id, type: "next", payload: event("NOT_DEPLOYED", "5", "SNAPSHOT") });
    socket.deliver({ id: first.id, type: "next", payload: event("WAITING", "6", "LIVE") });
    // an instance shared from another project: its events carry no cursor of this stream
    socket.deliver({ id: first.id, type: "next", payload: event("SUCCESS", null, "LIVE") });
    await vi.waitFor(() => expect(received).toHaveLength(3));

    socket.drop();
    const again = await vi.waitFor(() => {
      const [subscription] = FakeSocket.opened[1]?.subscribed() ?? [];
      expect(subscription).toBeDefined();
      return subscription;
    });
    expect(again.variables).toEqual({ project: "ml", after: "6" });
    const second = FakeSocket.opened[1];
    second.deliver({ id: again.id, type: "next", payload: event("IN_PROGRESS", "7", "REPLAY") });
    second.deliver({ id: again.id, type: "next", payload: event("SUCCESS", "8", "REPLAY") });
    second.deliver({ id: again.id, type: "next", payload: event("DESTROYING", "9", "LIVE") });
    await vi.waitFor(() => expect(received).toHaveLength(6));
    expect(received.slice(3)).toEqual([
      event("IN_PROGRESS", "7", "REPLAY").data,
      event("SUCCESS", "8", "REPLAY").data,
      event("DESTROYING", "9", "LIVE").data,
    ]);

    // and again: from the newest cursor, not the one it resumed from
    second.drop();
    const third = await vi.waitFor(() => {
      const [subscription] = FakeSocket.opened[2]?.subscribed() ?? [];
      expect(subscription).toBeDefined();
      return subscription;
    });
    expect(third.variables).toEqual({ project: "ml", after: "9" });
    unsubscribe();
  });

  it("before any event, subscribes again as it was asked; a subscription without $after, always", async () => {
    const client = await connected();
    const plain = pipe(client.subscription(NO_CURSOR, { id: "i-1" }), subscribe(() => {}));
    const events = pipe(client.subscription(EVENTS, { project: "ml" }), subscribe(() => {}));
    const firsts = await vi.waitFor(() => {
      const subscriptions = FakeSocket.opened[0]?.subscribed() ?? [];
      expect(subscriptions).toHaveLength(2);
      return subscriptions;
    });
    const socket = FakeSocket.opened[0];
    const plainId = firsts.find((s) => s.variables.id === "i-1")?.id;
    socket.deliver({ id: plainId, type: "next", payload: { data: { computeInstanceStatus: { status: "WAITING", cursor: "3", source: "SNAPSHOT" } } } });
    socket.drop();
    const again = await vi.waitFor(() => {
      const subscriptions = FakeSocket.opened[1]?.subscribed() ?? [];
      expect(subscriptions).toHaveLength(2);
      return subscriptions;
    });
    expect(again.map((s) => s.variables)).toEqual(expect.arrayContaining([{ id: "i-1" }, { project: "ml" }]));
    plain.unsubscribe();
    events.unsubscribe();
  });
});
