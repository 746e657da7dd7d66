import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { ProfilesListPage } from "./ProfilesListPage";
import { lastCall, renderStudio } from "./testUtils";

function node(id: string, name: string, sharing: { mode: string; projects: { id: string; name: string; displayName: string }[] }) {
  return {
    id,
    name,
    displayName: name.toUpperCase(),
    createdAt: "2026-03-01T10:00:00",
    allocationType: "DEDICATED",
    resources: { cpu: "8", memory: "64Gi", storage: "100Gi", gpuCount: 1, gpuVendor: "NVIDIA", gpuModel: "A100" },
    environmentTemplate: { id: "t1", name: "gpu-namespace", displayName: "GPU namespace" },
    environmentTemplateVersion: { id: "v1", version: "1.0.0" },
    sharing,
  };
}

function page(nodes: ReturnType<typeof node>[], hasNextPage: boolean, total: number) {
  return {
    data: {
      computeProfiles: {
        totalCount: total,
        pageInfo: { hasNextPage, endCursor: nodes.length ? `c-${nodes[nodes.length - 1].id}` : null },
        edges: nodes.map((n) => ({ cursor: `c-${n.id}`, node: n })),
      },
    },
  };
}

const FIRST = page(
  [
    node("cp1", "gpu-small", { mode: "NONE", projects: [] }),
    node("cp2", "gpu-large", { mode: "SELECTED_PROJECTS", projects: [{ id: "p2", name: "vision", displayName: "Vision" }] }),
  ],
  true,
  3,
);
const SECOND = page([node("cp3", "cpu-only", { mode: "ALL_PROJECTS", projects: [] })], false, 3);

const ROUTES = [{ path: "studio/profiles", element: <ProfilesListPage /> }];

function listAnswer(variables: Record<string, unknown>) {
  return variables.after ? SECOND : FIRST;
}

describe("Compute Profiles list", () => {
  it("lists the profiles with their sharing and loads more", async () => {
    const user = userEvent.setup({ delay: null });
    const { calls } = renderStudio("/p/ml/studio/profiles", ROUTES, { ProfilesList: listAnswer });
    const row = (await screen.findByRole("link", { name: "gpu-large" })).closest("tr")!;
    expect(within(row).getByText("Selected Projects")).toBeInTheDocument();
    expect(within(row).getByText("Vision")).toBeInTheDocument();
    expect(screen.getByText("Not shared")).toBeInTheDocument();
    expect(lastCall(calls, "ProfilesList")).toEqual({ project: "ml", search: null, first: 20 });

    await user.click(screen.getByRole("button", { name: "Load more" }));
    expect(await screen.findByRole("link", { name: "cpu-only" })).toBeInTheDocument();
    expect(lastCall(calls, "ProfilesList")).toMatchObject({ after: "c-cp2" });
    expect(screen.queryByRole("button", { name: "Load more" })).not.toBeInTheDocument();
  });

  it("asks before deleting, says it cannot be undone, and shows the server's refusal", async () => {
    const user = userEvent.setup({ delay: null });
    let attempts = 0;
    const { calls } = renderStudio("/p/ml/studio/profiles", ROUTES, {
      ProfilesList: listAnswer,
      ProfileDelete: () => {
        attempts += 1;
        return attempts === 1
          ? { data: { deleteComputeProfile: { deletedId: null, userErrors: [{ field: ["id"], message: "You are not allowed to do this.", code: "FORBIDDEN" }] } } }
          : { data: { deleteComputeProfile: { deletedId: "cp1", userErrors: [] } } };
      },
    });
    await user.click(await screen.findByRole("button", { name: "Actions for gpu-small" }));
    await user.click(await screen.findByRole("menuitem", { name: "Delete", hidden: true }));
    let dialog = await screen.findByRole("dialog", { name: "Delete compute profile" });
    expect(dialog).toHaveTextContent("This cannot be undone.");
    expect(dialog).toHaveTextContent("gpu-small");

    // Cancel: nothing is sent.
    await user.click(within(dialog).getByRole("button", { name: "Cancel" }));
    expect(calls.some((c) => c.name === "ProfileDelete")).toBe(false);

    await user.click(screen.getByRole("button", { name: "Actions for gpu-small" }));
    await user.click(await screen.findByRole("menuitem", { name: "Delete", hidden: true }));
    dialog = await screen.findByRole("dialog", { name: "Delete compute profile" });
    await user.click(within(dialog).getByRole("button", { name: "Delete" }));
    expect(lastCall(calls, "ProfileDelete")).toEqual({ id: "cp1" });
    expect(await within(dialog).findByText("You are not allowed to do this.")).toBeInTheDocument();

    const before = calls.filter((c) => c.name === "ProfilesList").length;
    await user.click(within(dialog).getByRole("button", { name: "Delete" }));
    // Deleted: the list is asked for again.
    await waitFor(() => expect(calls.filter((c) => c.name === "ProfilesList").length).toBeGreaterThan(before));
  });

  it("offers to add the first profile when there is none", async () => {
    renderStudio("/p/ml/studio/profiles", ROUTES, { ProfilesList: page([], false, 0) });
    expect(await screen.findByText("No compute profiles yet")).toBeInTheDocument();
    expect(screen.getAllByRole("link", { name: "Add Compute Profile" }).length).toBeGreaterThan(0);
  });

  it("shows a failed load with a retry", async () => {
    renderStudio("/p/ml/studio/profiles", ROUTES, {
      ProfilesList: { error: { message: "[GraphQL] Only admins of project \"ml\" manage its compute profiles" } },
    });
    expect(await screen.findByRole("alert")).toHaveTextContent("Only admins of project");
    expect(screen.getByRole("button", { name: "Try again" })).toBeInTheDocument();
  });
});
