import { notifications } from "@mantine/notifications";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { AuthProvider } from "../../app/auth";
import { AdminOnly } from "../../app/Layout";
import { fakeClient, renderPage } from "../../test/render";
import { meAnswer } from "../instance-templates/testing";
import { MembersPage } from "./MembersPage";
import { ok, pick, refused, T0 } from "./testing";

const MEMBERS = [
  { username: "alice", role: "ADMIN", disabled: false, addedAt: T0 },
  { username: "bob", role: "MEMBER", disabled: true, addedAt: T0 },
];

function render(answers: Parameters<typeof fakeClient>[0] = {}, role: "ADMIN" | "MEMBER" = "ADMIN") {
  const fake = fakeClient({
    Me: meAnswer(false, role),
    ProjectMembers: { data: { project: { id: "p1", name: "ml", displayName: "ML", members: MEMBERS } } },
    ...answers,
  });
  renderPage(
    <AuthProvider>
      <AdminOnly>
        <MembersPage />
      </AdminOnly>
    </AuthProvider>,
    { client: fake.client, path: "/p/ml/studio/members", pattern: "/p/:project/studio/members" },
  );
  return fake;
}

describe("members", () => {
  beforeEach(() => {
    vi.spyOn(notifications, "show").mockImplementation(() => "");
  });
  afterEach(() => vi.restoreAllMocks());

  it("is for the project's admins only", async () => {
    const { calls } = render({}, "MEMBER");
    expect(await screen.findByText(/Only the project's admins may open the studio/)).toBeInTheDocument();
    expect(calls.some((c) => c.name === "ProjectMembers")).toBe(false);
  });

  it("lists members with their role and status", async () => {
    render();
    const bob = await screen.findByTestId("member-bob");
    expect(within(bob).getByText("Disabled")).toBeInTheDocument();
    expect(within(bob).getByRole("combobox", { name: "Role of bob" })).toHaveValue("Member");
    expect(within(screen.getByTestId("member-alice")).getByRole("combobox", { name: "Role of alice" })).toHaveValue("Admin");
  });

  it("adds a member, the server's refusal under the username", async () => {
    const { calls } = render({
      MemberSet: (variables) => {
        const input = variables.input as { username: string };
        if (input.username === "nobody") return refused("setProjectMember", ["input", "username"], 'No user "nobody".', "NOT_FOUND", { membership: null });
        return ok("setProjectMember", { membership: { role: "ADMIN" } });
      },
    });
    await screen.findByTestId("member-bob");
    const form = screen.getByRole("form", { name: "Add a member" });
    const username = within(form).getByLabelText(/^Username/);
    fireEvent.change(username, { target: { value: "nobody" } });
    fireEvent.click(within(form).getByRole("button", { name: "Add Member" }));
    expect(await within(form).findByText('No user "nobody".')).toBeInTheDocument();
    expect(username).toHaveAttribute("aria-invalid", "true");

    fireEvent.change(username, { target: { value: " carol " } });
    await pick(within(form).getByRole("combobox", { name: /^Role/ }), "Admin");
    fireEvent.click(within(form).getByRole("button", { name: "Add Member" }));
    await waitFor(() => expect(calls.filter((c) => c.name === "MemberSet").length).toBe(2));
    expect(calls.filter((c) => c.name === "MemberSet")[1].variables).toEqual({ input: { project: "ml", username: "carol", role: "ADMIN" } });
    await waitFor(() => expect(username).toHaveValue(""));
    expect(within(form).queryByText('No user "nobody".')).not.toBeInTheDocument();
  });

  it("changes a role and removes a member after confirming", async () => {
    const { calls } = render({
      MemberSet: ok("setProjectMember", { membership: { role: "ADMIN" } }),
      MemberRemove: ok("removeProjectMember", { deletedId: "m2" }),
    });
    const bob = await screen.findByTestId("member-bob");
    await pick(within(bob).getByRole("combobox", { name: "Role of bob" }), "Admin");
    await waitFor(() => expect(calls.find((c) => c.name === "MemberSet")?.variables).toEqual({ input: { project: "ml", username: "bob", role: "ADMIN" } }));

    fireEvent.click(within(bob).getByRole("button", { name: "Remove bob" }));
    const confirm = await screen.findByRole("dialog", { name: "Remove bob from ml?" });
    fireEvent.click(within(confirm).getByRole("button", { name: "Remove" }));
    await waitFor(() => expect(calls.find((c) => c.name === "MemberRemove")?.variables).toEqual({ input: { project: "ml", username: "bob" } }));
  });

  it("shows why a removal was refused", async () => {
    render({ MemberRemove: refused("removeProjectMember", ["input", "username"], "A project keeps at least one admin.", "INVALID_STATE", { deletedId: null }) });
    fireEvent.click(within(await screen.findByTestId("member-alice")).getByRole("button", { name: "Remove alice" }));
    fireEvent.click(within(await screen.findByRole("dialog")).getByRole("button", { name: "Remove" }));
    await waitFor(() =>
      expect(notifications.show).toHaveBeenCalledWith(expect.objectContaining({ color: "red", title: "Could not remove alice", message: "A project keeps at least one admin." })),
    );
  });
});
