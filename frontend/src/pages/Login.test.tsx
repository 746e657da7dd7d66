import { screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { AuthProvider } from "../app/auth";
import { fakeClient, renderPage } from "../test/render";
import { LoginPage, localNext } from "./Login";

function render(path: string, oidc: { name: string; loginUrl: string } | null) {
  const fake = fakeClient({
    Me: { data: { me: null } },
    SignInOptions: { data: { signInOptions: { oidc } } },
  });
  renderPage(
    <AuthProvider>
      <LoginPage />
    </AuthProvider>,
    { client: fake.client, path, pattern: "/login" },
  );
  return fake;
}

describe("sign-in page", () => {
  it("offers the identity provider, coming back to where the person was going", async () => {
    render("/login?next=%2Fp%2Fml%2Fdashboard", { name: "Acme SSO", loginUrl: "/auth/oidc/login" });
    const link = await screen.findByRole("link", { name: "Sign in with Acme SSO" });
    expect(link).toHaveAttribute("href", "/auth/oidc/login?next=%2Fp%2Fml%2Fdashboard");
    // the password form is still there
    expect(screen.getByLabelText(/^Username/)).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Sign in" })).toBeInTheDocument();
  });

  it("offers no provider when none is configured", async () => {
    const { calls } = render("/login", null);
    expect(await screen.findByLabelText(/^Username/)).toBeInTheDocument();
    expect(calls.some((c) => c.name === "SignInOptions")).toBe(true);
    expect(screen.queryByRole("link", { name: /Sign in with/ })).not.toBeInTheDocument();
  });

  it("says why the provider's sign-in failed, for known codes only", async () => {
    render("/login?oidc_error=disabled", { name: "Acme SSO", loginUrl: "/auth/oidc/login" });
    expect(await screen.findByRole("alert")).toHaveTextContent("This account is disabled: ask a platform admin to enable it.");
  });

  it("never shows text from the address bar", async () => {
    render("/login?oidc_error=Call%20555-0100%20to%20unlock", { name: "Acme SSO", loginUrl: "/auth/oidc/login" });
    const alert = await screen.findByRole("alert");
    expect(alert).toHaveTextContent("Single sign-on failed. Try again.");
    expect(alert).not.toHaveTextContent("555");
  });

  it("keeps next to paths of this site", () => {
    expect(localNext("/p/ml/dashboard")).toBe("/p/ml/dashboard");
    expect(localNext("//evil.example")).toBe("/");
    expect(localNext("/\\evil.example")).toBe("/");
    expect(localNext("https://evil.example")).toBe("/");
    expect(localNext(null)).toBe("/");
  });
});
