import { CombinedError } from "urql";
import { GraphQLError } from "graphql";
import { beforeEach, describe, expect, it, vi } from "vitest";

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
