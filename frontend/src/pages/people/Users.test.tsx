import { notifications } from "@mantine/notifications";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { meAnswer } from "../instance-templates/testing";
import { PlatformAdminOnly } from "./common";
import { dialogsGone, ok, refused, usersAnswer } from "./testing";
import { USERS_PAGE, UsersPage } from "./UsersPage";

function render(answers: Parameters<typeof fakeClient>[0] = {}, platformAdmin = true) {
  const fake = fakeClient({ Me: meAnswer(platformAdmin), ...answers });
  renderPage(
    <AuthProvider>
      <PlatformAdminOnly>
        <UsersPage />
      </PlatformAdminOnly>
    </AuthProvider>,
    { client: fake.client, path: "/p/ml/admin/users", pattern: "/p/:project/admin/users" },
  );
  return fake;
}

describe("users (administration)", () => {
  beforeEach(() => {
    vi.spyOn(notifications, "show").mockImplementation(() => "");
  });
  afterEach(() => vi.restoreAllMocks());

  it("is for platform admins only", async () => {
    const { calls } = render({ UsersList: usersAnswer(["bob"]) }, false);
    expect(await screen.findByText(/Only platform admins may open the administration pages/)).toBeInTheDocument();
    expect(calls.some((c) => c.name === "UsersList")).toBe(false);
  });

  it("lists users, searches and pages through them", async () => {
    const { calls } = render({
      UsersList: (variables) => {
        if (variables.search === "bo") return usersAnswer(["bob"], { totalCount: 1 });
        if (variables.after === "c-end") return usersAnswer(["zoe"], { totalCount: 3 });
        return usersAnswer(["alice", "bob"], { hasNextPage: true, totalCount: 3 });
      },
    });
    const bob = await screen.findByTestId("user-bob");
    expect(within(bob).getByText("Active")).toBeInTheDocument();
    expect(within(bob).getByText("ml · member")).toBeInTheDocument();
    expect(screen.getByText("3 users")).toBeInTheDocument();
    expect(calls.find((c) => c.name === "UsersList")?.variables).toEqual({ search: null, first: USERS_PAGE, after: null });
    // one cannot disable nor delete oneself (alice is signed in)
    const alice = screen.getByTestId("user-alice");
    expect(within(alice).getByRole("button", { name: "Disable alice" })).toBeDisabled();
    expect(within(alice).getByRole("button", { name: "Delete alice" })).toBeDisabled();

    fireEvent.click(screen.getByRole("button", { name: "Next page" }));
    expect(await screen.findByTestId("user-zoe")).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Next page" })).toBeDisabled();
    fireEvent.click(screen.getByRole("button", { name: "Previous page" }));
    expect(await screen.findByTestId("user-alice")).toBeInTheDocument();

    fireEvent.change(screen.getByRole("textbox", { name: "Search" }), { target: { value: " bo " } });
    await waitFor(() => expect(screen.queryByTestId("user-alice")).not.toBeInTheDocument());
    expect(screen.getByText('1 user matching "bo"')).toBeInTheDocument();
    expect(calls.filter((c) => c.name === "UsersList").at(-1)?.variables).toEqual({ search: "bo", first: USERS_PAGE, after: null });
  });

  it("adds a user, showing the server's refusal under its field", async () => {
    const { calls } = render({
      UsersList: usersAnswer(["alice"]),
      UserCreate: (variables) => {
        const input = variables.input as { username: string };
        if (input.username === "alice") return refused("createUser", ["input", "username"], 'User "alice" already exists.', "TAKEN", { user: null });
        return ok("createUser", { user: { id: "u9", username: input.username } });
      },
    });
    await screen.findByTestId("user-alice");
    fireEvent.click(screen.getByRole("button", { name: "Add User" }));
    const dialog = await screen.findByRole("dialog");
    fireEvent.change(within(dialog).getByLabelText(/^Username/), { target: { value: "alice" } });
    fireEvent.change(within(dialog).getByLabelText(/^Password/), { target: { value: "a long password" } });
    fireEvent.click(within(dialog).getByRole("checkbox", { name: /Platform admin/ }));
    fireEvent.click(within(dialog).getByRole("button", { name: "Add User" }));
    const username = within(dialog).getByLabelText(/^Username/);
    await waitFor(() => expect(username).toHaveAccessibleDescription(expect.stringContaining('User "alice" already exists.')));
    fireEvent.change(username, { target: { value: " carol " } });
    fireEvent.click(within(dialog).getByRole("button", { name: "Add User" }));
    await dialogsGone();
    const created = calls.filter((c) => c.name === "UserCreate").map((c) => c.variables.input);
    expect(created[1]).toEqual({ username: "carol", password: "a long password", isPlatformAdmin: true });
    expect(notifications.show).toHaveBeenCalledWith(expect.objectContaining({ title: "User added" }));
  });

  it("disables, enables and deletes a user after confirming", async () => {
    const { calls } = render({
      UsersList: usersAnswer(["alice", "bob"]),
      UserSetDisabled: (variables) => ok("setUserDisabled", { user: { id: "u-bob", disabled: (variables.input as { disabled: boolean }).disabled } }),
      UserDelete: ok("deleteUser", { deletedId: "u-bob" }),
    });
    const bob = await screen.findByTestId("user-bob");
    fireEvent.click(within(bob).getByRole("button", { name: "Disable bob" }));
    await waitFor(() => expect(calls.find((c) => c.name === "UserSetDisabled")?.variables).toEqual({ input: { username: "bob", disabled: true } }));
    await waitFor(() => expect(notifications.show).toHaveBeenCalledWith(expect.objectContaining({ title: "bob disabled" })));

    fireEvent.click(within(bob).getByRole("button", { name: "Delete bob" }));
    const confirm = await screen.findByRole("dialog");
    expect(within(confirm).getByText(/API tokens and sessions stop at once/)).toBeInTheDocument();
    fireEvent.click(within(confirm).getByRole("button", { name: "Cancel" }));
    await dialogsGone();
    expect(calls.some((c) => c.name === "UserDelete")).toBe(false);
    fireEvent.click(within(bob).getByRole("button", { name: "Delete bob" }));
    fireEvent.click(within(await screen.findByRole("dialog")).getByRole("button", { name: "Delete" }));
    await waitFor(() => expect(calls.find((c) => c.name === "UserDelete")?.variables).toEqual({ username: "bob" }));
  });

  it("shows why a change was refused", async () => {
    render({
      UsersList: usersAnswer(["alice", "bob"]),
      UserSetDisabled: refused("setUserDisabled", ["input", "username"], "You cannot disable yourself.", "INVALID", { user: null }),
    });
    fireEvent.click(within(await screen.findByTestId("user-bob")).getByRole("button", { name: "Disable bob" }));
    await waitFor(() =>
      expect(notifications.show).toHaveBeenCalledWith(expect.objectContaining({ color: "red", title: "Could not disable bob", message: "You cannot disable yourself." })),
    );
  });

  it("resets a password: the two must match, the server's rule is shown under the field", async () => {
    const { calls } = render({
      UsersList: usersAnswer(["alice", "bob"]),
      PasswordReset: (variables) => {
        const input = variables.input as { newPassword: string };
        if (input.newPassword.length < 12) return refused("resetPassword", ["input", "newPassword"], "At least 12 characters.", "INVALID", { user: null });
        return ok("resetPassword", { user: { id: "u-bob" } });
      },
    });
    fireEvent.click(within(await screen.findByTestId("user-bob")).getByRole("button", { name: "Reset the password of bob" }));
    const dialog = await screen.findByRole("dialog", { name: "Reset the password of bob" });
    const password = within(dialog).getByLabelText(/^New password/);
    const repeat = within(dialog).getByLabelText(/^Repeat the new password/);
    fireEvent.change(password, { target: { value: "short" } });
    fireEvent.change(repeat, { target: { value: "shirt" } });
    fireEvent.click(within(dialog).getByRole("button", { name: "Reset password" }));
    await waitFor(() => expect(repeat).toHaveAccessibleDescription("The two passwords differ."));
    expect(calls.some((c) => c.name === "PasswordReset")).toBe(false);
    fireEvent.change(repeat, { target: { value: "short" } });
    fireEvent.click(within(dialog).getByRole("button", { name: "Reset password" }));
    await waitFor(() => expect(password).toHaveAccessibleDescription("At least 12 characters."));
    fireEvent.change(password, { target: { value: "a much longer one" } });
    fireEvent.change(repeat, { target: { value: "a much longer one" } });
    fireEvent.click(within(dialog).getByRole("button", { name: "Reset password" }));
    await dialogsGone();
    expect(calls.filter((c) => c.name === "PasswordReset").at(-1)?.variables).toEqual({ input: { username: "bob", newPassword: "a much longer one" } });
  });
});
