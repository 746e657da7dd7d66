import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";

import { AuthProvider } from "../app/auth";
import { fakeClient, renderPage } from "../test/render";
import { SharingModal, type Shareable, type SharingTarget } from "./SharingModal";

const PROJECTS = [
  { id: "p1", name: "ml", displayName: "Machine Learning" },
  { id: "p2", name: "vision", displayName: "Vision" },
  { id: "p3", name: "nlp", displayName: "nlp" },
  { id: "p0", name: "gpupaas-system", displayName: "System" },
];

const ME = {
  data: {
    me: {
      id: "u1",
      username: "alice",
      isPlatformAdmin: true,
      memberships: [{ role: "ADMIN", project: { id: "p1", name: "ml", displayName: "Machine Learning" } }],
    },
  },
};

const PROFILE: SharingTarget = { id: "cp1", name: "sm-gpu", displayName: "Small GPU", project: "ml", sharing: { mode: "NONE", projects: [] } };

function saved(mode: string, names: string[] = []) {
  const sharing = { mode, projects: names.map((name, i) => ({ id: `x${i}`, name, displayName: name })) };
  return { data: { setComputeProfileSharing: { computeProfile: { id: "cp1", sharing }, userErrors: [] } } };
}

function open(answers: Parameters<typeof fakeClient>[0], target: SharingTarget = PROFILE, kind: Shareable = "profile") {
  const fake = fakeClient({ Me: ME, Projects: { data: { projects: PROJECTS } }, ...answers });
  const onClose = vi.fn();
  const onSaved = vi.fn();
  renderPage(
    <AuthProvider>
      <SharingModal kind={kind} target={target} onClose={onClose} onSaved={onSaved} />
    </AuthProvider>,
    { client: fake.client },
  );
  return { ...fake, onClose, onSaved };
}

function lastCall(calls: { name: string; variables: Record<string, unknown> }[], name: string) {
  return calls.filter((c) => c.name === name).at(-1)?.variables;
}

function projectsInput(dialog: HTMLElement): HTMLElement {
  return within(dialog).getAllByLabelText(/^Projects/).find((el) => el.tagName === "INPUT")!;
}

describe("Manage Sharing", () => {
  it("shares a profile with all projects (no project list sent)", async () => {
    const user = userEvent.setup({ delay: null });
    const { calls, onClose, onSaved } = open({ ProfileSetSharing: saved("ALL_PROJECTS") });
    const dialog = await screen.findByRole("dialog", { name: "Manage Sharing" });
    expect(within(dialog).getByText(/see it in their catalog/)).toBeInTheDocument();
    expect(within(dialog).getByLabelText("None")).toBeChecked();
    await user.click(within(dialog).getByLabelText("All Projects"));
    await user.click(within(dialog).getByRole("button", { name: "Save" }));
    expect(lastCall(calls, "ProfileSetSharing")).toEqual({ id: "cp1", sharing: { mode: "ALL_PROJECTS", projects: null } });
    expect(onSaved).toHaveBeenCalledWith("cp1", { mode: "ALL_PROJECTS", projects: [] });
    expect(onClose).toHaveBeenCalled();
  });

  it("offers the other projects (not its own, not the system one) and sends the chosen ones", async () => {
    const user = userEvent.setup({ delay: null });
    const { calls } = open({ ProfileSetSharing: saved("SELECTED_PROJECTS", ["vision"]) });
    const dialog = await screen.findByRole("dialog", { name: "Manage Sharing" });
    await user.click(within(dialog).getByLabelText("Selected Projects"));
    // Nothing chosen yet: it says so instead of sending.
    await user.click(within(dialog).getByRole("button", { name: "Save" }));
    expect(within(dialog).getByText("Choose at least one project to share with.")).toBeInTheDocument();
    expect(calls.some((c) => c.name === "ProfileSetSharing")).toBe(false);

    const input = projectsInput(dialog);
    await user.click(input);
    const listbox = document.getElementById(input.getAttribute("aria-controls") ?? "")!;
    const options = within(listbox)
      .getAllByRole("option", { hidden: true })
      .map((o) => o.textContent);
    expect(options).toEqual(["Vision (vision)", "nlp"]);
    await user.click(within(listbox).getByRole("option", { name: "Vision (vision)", hidden: true }));
    await user.click(within(dialog).getByRole("button", { name: "Save" }));
    expect(lastCall(calls, "ProfileSetSharing")).toEqual({ id: "cp1", sharing: { mode: "SELECTED_PROJECTS", projects: ["vision"] } });
  });

  it("shows the server's errors next to the projects, naming the project, and the rest above the buttons", async () => {
    const user = userEvent.setup({ delay: null });
    const { onClose } = open(
      {
        ProfileSetSharing: {
          data: {
            setComputeProfileSharing: {
              computeProfile: null,
              userErrors: [
                { field: ["sharing", "projects", "1"], message: 'project "gone" not found', code: "NOT_FOUND" },
                { field: ["id"], message: "No such compute profile.", code: "NOT_FOUND" },
              ],
            },
          },
        },
      },
      {
        ...PROFILE,
        sharing: {
          mode: "SELECTED_PROJECTS",
          projects: [
            { id: "p2", name: "vision", displayName: "Vision" },
            { id: "p9", name: "gone", displayName: "gone" },
          ],
        },
      },
    );
    const dialog = await screen.findByRole("dialog", { name: "Manage Sharing" });
    expect(within(dialog).getByLabelText("Selected Projects")).toBeChecked();
    await user.click(within(dialog).getByRole("button", { name: "Save" }));
    expect(within(dialog).getByText('gone: project "gone" not found')).toBeInTheDocument();
    expect(projectsInput(dialog)).toHaveAttribute("aria-invalid", "true");
    expect(within(within(dialog).getByRole("alert")).getByText("id: No such compute profile.")).toBeInTheDocument();
    expect(onClose).not.toHaveBeenCalled();
  });

  it("shares a compute instance with its own mutation and texts", async () => {
    const user = userEvent.setup({ delay: null });
    const sharing = { mode: "ALL_PROJECTS", projects: [] };
    const { calls, onSaved } = open(
      { InstanceSharingSet: { data: { setComputeInstanceSharing: { computeInstance: { id: "ci1", updatedAt: "2025-01-01T00:00:00Z", sharing }, userErrors: [] } } } },
      { id: "ci1", name: "trainer", displayName: "Trainer", project: "ml", sharing: { mode: "NONE", projects: [] } },
      "instance",
    );
    const dialog = await screen.findByRole("dialog", { name: "Manage Sharing" });
    expect(within(dialog).getByText(/see it and its status, read-only/)).toBeInTheDocument();
    await user.click(within(dialog).getByLabelText("All Projects"));
    await user.click(within(dialog).getByRole("button", { name: "Save" }));
    expect(lastCall(calls, "InstanceSharingSet")).toEqual({ id: "ci1", sharing: { mode: "ALL_PROJECTS", projects: null } });
    expect(onSaved).toHaveBeenCalledWith("ci1", sharing);
  });
});
