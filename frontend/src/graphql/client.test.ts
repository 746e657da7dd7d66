import { CombinedError } from "urql";
import { GraphQLError } from "graphql";
import { describe, expect, it, vi } from "vitest";

import { signedOut, toSignIn } from "./client";

describe("a session that stopped working", () => {
  it("is an UNAUTHENTICATED error, not any refusal", () => {
    const unauthenticated = new CombinedError({ graphQLErrors: [new GraphQLError("Sign in first", { extensions: { code: "UNAUTHENTICATED" } })] });
    const forbidden = new CombinedError({ graphQLErrors: [new GraphQLError("No", { extensions: { code: "FORBIDDEN" } })] });
    const network = new CombinedError({ networkError: new Error("offline") });
    expect(signedOut(unauthenticated)).toBe(true);
    expect(signedOut(forbidden)).toBe(false);
    expect(signedOut(network)).toBe(false);
  });

  it("sends the page to sign in, coming back afterwards; never from the sign-in page itself", () => {
    const assign = vi.fn();
    toSignIn({ pathname: "/p/ml/account", search: "?tab=1", assign });
    expect(assign).toHaveBeenCalledWith("/login?next=%2Fp%2Fml%2Faccount%3Ftab%3D1");
    assign.mockClear();
    toSignIn({ pathname: "/login", search: "", assign });
    expect(assign).not.toHaveBeenCalled();
  });
});
