import { notifications } from "@mantine/notifications";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { meAnswer } from "../instance-templates/testing";
import { AccountPage, endOfDay } from "./AccountPage";
import { dialogsGone, ok, refused, T0 } from "./testing";

const TOKENS = [
  { id: "t1", name: "laptop", createdAt: T0, lastUsedAt: "2026-01-02T00:00:00Z", expiresAt: null },
  { id: "t2", name: "old-ci", createdAt: T0, lastUsedAt: null, expiresAt: "2026-01-05T00:00:00Z" },
];

const SSH_KEYS = [{ id: "k1", name: "laptop", keyType: "ssh-ed25519", bits: 256, fingerprint: "SHA256:abc", createdAt: T0 }];
const ED25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG4rT3vTt99Ox5kndS4HmgTrKBT8SKzhK4rhGkEVGlCI me@desk";

function render(answers: Parameters<typeof fakeClient>[0] = {}) {
  const fake = fakeClient({ Me: meAnswer(false, "MEMBER"), ApiTokens: { data: { apiTokens: TOKENS } }, SshPublicKeys: { data: { sshPublicKeys: SSH_KEYS } }, ...answers });
  renderPage(
    <AuthProvider>
      <AccountPage />
    </AuthProvider>,
    { client: fake.client, path: "/p/ml/account", pattern: "/p/:project/account" },
  );
  return fake;
}

describe("account", () => {
  beforeEach(() => {
    vi.spyOn(notifications, "show").mockImplementation(() => "");
  });
  afterEach(() => vi.restoreAllMocks());

  it("changes one's password: the repeat must match, the server's errors go under their fields", async () => {
    const { calls } = render({
      PasswordChange: (variables) => {
        const input = variables.input as { currentPassword: string; newPassword: string };
        if (input.currentPassword !== "correct horse battery") return refused("changePassword", ["input", "currentPassword"], "The current password is wrong.", "INVALID", { user: null });
        if (input.newPassword.length < 12) return refused("changePassword", ["input", "newPassword"], "At least 12 characters.", "INVALID", { user: null });
        return ok("changePassword", { user: { id: "u1" } });
      },
    });
    expect(await screen.findByText("alice")).toBeInTheDocument();
    const current = screen.getByLabelText(/^Current password/);
    const password = screen.getByLabelText(/^New password/);
    const repeat = screen.getByLabelText(/^Repeat the new password/);
    const submit = screen.getByRole("button", { name: "Change password" });

    fireEvent.change(current, { target: { value: "wrong" } });
    fireEvent.change(password, { target: { value: "a brand new one" } });
    fireEvent.change(repeat, { target: { value: "a brand new 1" } });
    fireEvent.click(submit);
    await waitFor(() => expect(repeat).toHaveAccessibleDescription("The two new passwords differ."));
    expect(repeat).toHaveAttribute("aria-invalid", "true");
    expect(calls.some((c) => c.name === "PasswordChange")).toBe(false);

    fireEvent.change(repeat, { target: { value: "a brand new one" } });
    fireEvent.click(submit);
    await waitFor(() => expect(current).toHaveAccessibleDescription("The current password is wrong."));
    expect(repeat).not.toHaveAttribute("aria-invalid", "true");

    fireEvent.change(current, { target: { value: "correct horse battery" } });
    fireEvent.change(password, { target: { value: "short" } });
    fireEvent.change(repeat, { target: { value: "short" } });
    fireEvent.click(submit);
    await waitFor(() => expect(password).toHaveAccessibleDescription("At least 12 characters."));

    fireEvent.change(password, { target: { value: "a brand new one" } });
    fireEvent.change(repeat, { target: { value: "a brand new one" } });
    fireEvent.click(submit);
    expect(await screen.findByText("Password changed")).toBeInTheDocument();
    expect(calls.filter((c) => c.name === "PasswordChange").at(-1)?.variables).toEqual({
      input: { currentPassword: "correct horse battery", newPassword: "a brand new one" },
    });
    expect(current).toHaveValue("");
    expect(password).toHaveValue("");
  });

  it("lists API tokens with when they were created, last used and expire", async () => {
    render();
    const laptop = await screen.findByTestId("token-laptop");
    expect(within(laptop).getAllByText("Never")).toHaveLength(1); // expires never; used once
    const old = screen.getByTestId("token-old-ci");
    expect(within(old).getByText("Never")).toBeInTheDocument(); // never used
    expect(within(old).getByText("Expired")).toBeInTheDocument();
    expect(within(old).getByText(new Date("2026-01-05T00:00:00Z").toLocaleString())).toBeInTheDocument();
  });

  it("creates a token and shows its secret once", async () => {
    const { calls } = render({
      ApiTokenCreate: (variables) => {
        const input = variables.input as { name: string };
        if (!input.name) return refused("createApiToken", ["input", "name"], "A name is required.", "REQUIRED", { token: null, apiToken: null });
        return ok("createApiToken", { token: "gpt_secret123", apiToken: { id: "t3", name: input.name } });
      },
    });
    await screen.findByTestId("token-laptop");
    fireEvent.click(screen.getByRole("button", { name: "Create Token" }));
    const dialog = await screen.findByRole("dialog");
    const name = within(dialog).getByLabelText(/^Name/);
    fireEvent.change(name, { target: { value: "  " } }); // blank once trimmed: the server says why
    fireEvent.click(within(dialog).getByRole("button", { name: "Create Token" }));
    await waitFor(() => expect(name).toHaveAccessibleDescription(expect.stringContaining("A name is required.")));
    fireEvent.change(name, { target: { value: " ci " } });
    fireEvent.change(within(dialog).getByLabelText(/^Expires/), { target: { value: "2026-12-31" } });
    fireEvent.click(within(dialog).getByRole("button", { name: "Create Token" }));
    expect(await within(dialog).findByTestId("secret-once")).toHaveTextContent("gpt_secret123");
    expect(within(dialog).getByText(/You will not see it again/)).toBeInTheDocument();
    expect(within(dialog).getByRole("button", { name: "Copy to the clipboard" })).toBeInTheDocument();
    expect(calls.filter((c) => c.name === "ApiTokenCreate").at(-1)?.variables).toEqual({ input: { name: "ci", expiresAt: "2027-01-01T00:00:00.000Z" } });
    fireEvent.click(within(dialog).getByRole("button", { name: "Done" }));
    await waitFor(() => expect(screen.queryByTestId("secret-once")).not.toBeInTheDocument(), { timeout: 5000 });
    await dialogsGone();
    // opened again, the form is empty and no secret is shown
    fireEvent.click(screen.getByRole("button", { name: "Create Token" }));
    const again = await screen.findByRole("dialog");
    expect(within(again).getByLabelText(/^Name/)).toHaveValue("");
    expect(within(again).queryByTestId("secret-once")).not.toBeInTheDocument();
  });

  it("revokes a token after confirming", async () => {
    const { calls } = render({ ApiTokenRevoke: ok("revokeApiToken", { deletedId: "t1" }) });
    fireEvent.click(within(await screen.findByTestId("token-laptop")).getByRole("button", { name: "Revoke laptop" }));
    const confirm = await screen.findByRole("dialog", { name: 'Revoke the token "laptop"?' });
    fireEvent.click(within(confirm).getByRole("button", { name: "Revoke" }));
    await waitFor(() => expect(calls.find((c) => c.name === "ApiTokenRevoke")?.variables).toEqual({ id: "t1" }));
    await waitFor(() => expect(notifications.show).toHaveBeenCalledWith(expect.objectContaining({ title: "Token revoked" })));
  });

  it("lists one's SSH keys, adds one with the server's validation message under its field, deletes one", async () => {
    const { calls } = render({
      SshPublicKeyAdd: (variables) => {
        const input = variables.input as { publicKey: string; name: string | null };
        if (!input.publicKey.startsWith("ssh-")) {
          return refused("addSshPublicKey", ["input", "publicKey"], "not an SSH public key: paste one line of a .pub file (ssh-ed25519 AAAA... comment)", "INVALID", { sshPublicKey: null });
        }
        return ok("addSshPublicKey", { sshPublicKey: { id: "k2", name: input.name ?? "me@desk", fingerprint: "SHA256:def" } });
      },
      SshPublicKeyDelete: ok("deleteSshPublicKey", { deletedId: "k1" }),
    });
    const row = await screen.findByTestId("ssh-key-laptop");
    expect(within(row).getByText("SHA256:abc")).toBeInTheDocument();
    expect(within(row).getByText("ssh-ed25519 (256 bits)")).toBeInTheDocument();

    const key = screen.getByLabelText(/^Public key/);
    fireEvent.change(key, { target: { value: "AAAA not a key" } });
    fireEvent.click(screen.getByRole("button", { name: "Add SSH key" }));
    await waitFor(() => expect(key).toHaveAccessibleDescription(expect.stringContaining("not an SSH public key: paste one line of a .pub file")));
    expect(key).toHaveAttribute("aria-invalid", "true");

    fireEvent.change(key, { target: { value: ` ${ED25519}\n` } });
    fireEvent.click(screen.getByRole("button", { name: "Add SSH key" }));
    await waitFor(() => expect(notifications.show).toHaveBeenCalledWith(expect.objectContaining({ title: "SSH key added" })));
    expect(calls.filter((c) => c.name === "SshPublicKeyAdd").at(-1)?.variables).toEqual({ input: { publicKey: ED25519, name: null } });
    expect(key).toHaveValue("");
    expect(key).not.toHaveAttribute("aria-invalid", "true");

    fireEvent.click(within(row).getByRole("button", { name: "Delete laptop" }));
    const confirm = await screen.findByRole("dialog", { name: 'Delete the SSH key "laptop"?' });
    fireEvent.click(within(confirm).getByRole("button", { name: "Delete" }));
    await waitFor(() => expect(calls.find((c) => c.name === "SshPublicKeyDelete")?.variables).toEqual({ id: "k1" }));
  });

  it("sends no expiry when none is chosen", () => {
    expect(endOfDay("")).toBeNull();
    expect(endOfDay("2026-02-28")).toBe("2026-03-01T00:00:00.000Z");
  });
});
