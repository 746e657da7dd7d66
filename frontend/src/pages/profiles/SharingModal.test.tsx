import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";

import { fakeClient, renderPage } from "../../test/render";
import { SharingModal, type SharingTarget } from "./SharingModal";
import { lastCall } from "./testUtils";

const PROJECTS = {
  data: {
    projects: [
      { id: "p1", name: "ml", displayName: "Machine Learning" },
      { id: "p2", name: "vision", displayName: "Vision" },
      { id: "p3", name: "nlp", displayName: "nlp" },
      { id: "p0", name: "gpupaas-system", displayName: "System" },
    ],
  },
};

const PROFILE: SharingTarget = {
  id: "cp1",
  name: "sm-gpu",
  displayName: "Small GPU",
  sharing: { mode: "NONE", projects: [] },
};

function saved(mode: string, projects: { name: string }[] = []) {
  return {
    data: {
      setComputeProfileSharing: {
        computeProfile: { id: "cp1", sharing: { mode, projects: projects.map((p, i) => ({ id: `x${i}`, displayName: p.name, ...p })) } },
        userErrors: [],
      },
    },
  };
}

function open(answers: Parameters<typeof fakeClient>[0], profile: SharingTarget = PROFILE) {
  const fake = fakeClient({ ProfileSharingProjects: PROJECTS, ...answers });
  const onClose = vi.fn();
  const onSaved = vi.fn();
  renderPage(<SharingModal profile={profile} ownerProject="ml" onClose={onClose} onSaved={onSaved} />, { client: fake.client });
  return { ...fake, onClose, onSaved };
}

describe("Manage Sharing", () => {
  it("shares with all projects (no project list sent)", async () => {
    const user = userEvent.setup({ delay: null });
    const { calls, onClose, onSaved } = open({ ProfileSetSharing: saved("ALL_PROJECTS") });
    const dialog = await screen.findByRole("dialog", { name: "Manage Sharing" });
    expect(within(dialog).getByLabelText("None")).toBeChecked();
    await user.click(within(dialog).getByLabelText("All Projects"));
    await user.click(within(dialog).getByRole("button", { name: "Save" }));
    expect(lastCall(calls, "ProfileSetSharing")).toEqual({ id: "cp1", sharing: { mode: "ALL_PROJECTS", projects: null } });
    expect(onSaved).toHaveBeenCalled();
    expect(onClose).toHaveBeenCalled();
  });

  it("offers the other projects (not its own, not the system one) and sends the chosen ones", async () => {
    const user = userEvent.setup({ delay: null });
    const { calls } = open({ ProfileSetSharing: saved("SELECTED_PROJECTS", [{ name: "vision" }]) });
    const dialog = await screen.findByRole("dialog", { name: "Manage Sharing" });
    await user.click(within(dialog).getByLabelText("Selected Projects"));
    // Nothing chosen yet: it says so instead of sending.
    await user.click(within(dialog).getByRole("button", { name: "Save" }));
    expect(within(dialog).getByText("Choose at least one project to share with.")).toBeInTheDocument();
    expect(calls.some((c) => c.name === "ProfileSetSharing")).toBe(false);

    const input = within(dialog).getAllByLabelText(/^Projects/).find((el) => el.tagName === "INPUT")!;
    await user.click(input);
    const listbox = document.getElementById(input.getAttribute("aria-controls") ?? "")!;
    const options = within(listbox)
      .getAllByRole("option", { hidden: true })
      .map((o) => o.textContent);
    expect(options).toEqual(["Vision (vision)", "nlp"]);
    await user.click(within(listbox).getByRole("option", { name: "Vision (vision)", hidden: true }));
    await user.click(within(dialog).getByRole("button", { name: "Save" }));
    expect(lastCall(calls, "ProfileSetSharing")).toEqual({
      id: "cp1",
      sharing: { mode: "SELECTED_PROJECTS", projects: ["vision"] },
    });
  });

  it("shows the server's errors next to the projects, naming the project", async () => {
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
      { ...PROFILE, sharing: { mode: "SELECTED_PROJECTS", projects: [{ name: "vision", displayName: "Vision" }, { name: "gone", displayName: "gone" }] } },
    );
    const dialog = await screen.findByRole("dialog", { name: "Manage Sharing" });
    expect(within(dialog).getByLabelText("Selected Projects")).toBeChecked();
    await user.click(within(dialog).getByRole("button", { name: "Save" }));
    expect(within(dialog).getByText('gone: project "gone" not found')).toBeInTheDocument();
    const input = within(dialog).getAllByLabelText(/^Projects/).find((el) => el.tagName === "INPUT")!;
    expect(input).toHaveAttribute("aria-invalid", "true");
    expect(within(dialog).getByText("id: No such compute profile.")).toBeInTheDocument();
    expect(onClose).not.toHaveBeenCalled();
  });
});
