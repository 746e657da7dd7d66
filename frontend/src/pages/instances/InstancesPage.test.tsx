import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { InstancesPage } from "./InstancesPage";
import { mergePage, type Connection } from "./useInstanceList";
import { actions, auth, project, RUN_UNDER_WAY } from "./testData";

function row(name: string, overrides: Record<string, unknown> = {}) {
  return {
    id: `id-${name}`,
    name,
    displayName: name.charAt(0).toUpperCase() + name.slice(1),
    profileName: "a100-large",
    status: "WAITING",
    statusMessage: null,
    createdAt: "2025-03-01T10:00:00+00:00",
    updatedAt: "2025-03-01T10:00:00+00:00",
    project,
    profile: { id: "prof-1" },
    owner: { username: "ada" },
    sharing: { mode: "NONE", projects: [] },
    actions: actions(),
    ...overrides,
  };
}

function page(rows: ReturnType<typeof row>[], hasNextPage = false, totalCount = rows.length) {
  return {
    data: {
      computeInstances: {
        totalCount,
        pageInfo: { hasNextPage, endCursor: rows.length ? `c-${rows[rows.length - 1].name}` : null },
        edges: rows.map((node) => ({ cursor: `c-${node.name}`, node })),
      },
    },
  };
}

function setup(answers: Parameters<typeof fakeClient>[0]) {
  const fake = fakeClient({ ...auth, ...answers });
  renderPage(
    <AuthProvider>
      <InstancesPage />
    </AuthProvider>,
    { client: fake.client, path: "/p/ml/instances", pattern: "/p/:project/instances" },
  );
  return fake;
}

function statusOf(name: string) {
  return within(screen.getByTestId(`instance-row-${name}`)).getAllByText(/.+/).find((el) => el.closest("[data-status]"))!.closest("[data-status]");
}

describe("InstancesPage", () => {
  it("updates a row's status live from the project's events, without reloading", async () => {
    const { calls } = setup({
      InstancesList: page([row("trainer", { status: "WAITING" }), row("notebook", { status: "SUCCESS", createdAt: "2025-02-01T10:00:00+00:00" })]),
      InstanceEvents: {
        data: {
          computeInstanceEvents: {
            status: "IN_PROGRESS",
            message: "applying the namespace",
            at: "2025-03-01T10:02:00+00:00",
            instance: { id: "id-trainer", name: "trainer", displayName: "Trainer", updatedAt: "2025-03-01T10:02:00+00:00", project, actions: actions(RUN_UNDER_WAY) },
          },
        },
      },
    });
    await screen.findByTestId("instance-row-trainer");
    await waitFor(() => expect(statusOf("trainer")).toHaveAttribute("data-status", "IN_PROGRESS"));
    expect(within(screen.getByTestId("instance-row-trainer")).getByText("applying the namespace")).toBeInTheDocument();
    expect(statusOf("notebook")).toHaveAttribute("data-status", "SUCCESS");
    // Once: the page did not ask for the list again.
    expect(calls.filter((c) => c.name === "InstancesList")).toHaveLength(1);
    // The menu follows what the event says may be done now, with the API's reasons.
    fireEvent.click(within(screen.getByTestId("instance-row-trainer")).getByRole("button", { name: "Actions for Trainer" }));
    const deploy = await screen.findByRole("menuitem", { name: /Deploy/, hidden: true });
    expect(deploy).toBeDisabled();
    expect(deploy).toHaveTextContent(RUN_UNDER_WAY.DEPLOY);
    expect(screen.getByRole("menuitem", { name: /Manage Sharing/, hidden: true })).not.toBeDisabled();
  });

  it("asks for the list again when the server says events were missed while the socket was down", async () => {
    const event = (source: string, missedEvents: boolean) => ({
      data: {
        computeInstanceEvents: {
          status: "SUCCESS",
          message: null,
          at: "2025-03-01T10:09:00+00:00",
          cursor: "40",
          source,
          missedEvents,
          instance: { id: "id-trainer", name: "trainer", displayName: "Trainer", updatedAt: "2025-03-01T10:09:00+00:00", project, owner: { username: "ada" }, actions: actions() },
        },
      },
    });
    const { calls } = setup({ InstancesList: page([row("trainer")]), InstanceEvents: [event("SNAPSHOT", false), event("SNAPSHOT", true)] });
    await screen.findByTestId("instance-row-trainer");
    await waitFor(() => expect(calls.filter((c) => c.name === "InstancesList")).toHaveLength(2));
    expect(statusOf("trainer")).toHaveAttribute("data-status", "SUCCESS");
  });

  it("shows sharing, profile and an actions menu per row", async () => {
    setup({
      InstancesList: page([
        row("trainer", { status: "SUCCESS", sharing: { mode: "ALL_PROJECTS", projects: [] } }),
        row("borrowed", { project: { id: "p2", name: "vision", displayName: "Vision" } }),
      ]),
    });
    await screen.findByTestId("instance-row-trainer");
    const trainer = screen.getByTestId("instance-row-trainer");
    expect(within(trainer).getByText("All Projects")).toBeInTheDocument();
    expect(within(trainer).getByRole("link", { name: "a100-large" })).toHaveAttribute("href", "/p/ml/catalog/prof-1");
    expect(within(screen.getByTestId("instance-row-borrowed")).getByText("From Vision")).toBeInTheDocument();
    fireEvent.click(within(trainer).getByRole("button", { name: "Actions for Trainer" }));
    expect(await screen.findByRole("menuitem", { name: /Manage Sharing/, hidden: true })).toBeInTheDocument();
    expect(screen.getByRole("menuitem", { name: /Destroy/, hidden: true })).not.toBeDisabled();
  });

  it("manages sharing in a modal, showing the server's error next to the projects", async () => {
    const { calls } = setup({
      InstancesList: page([row("trainer", { status: "SUCCESS" })]),
      InstanceSharingSet: (variables) =>
        (variables as { sharing: { projects: string[] | null } }).sharing.projects?.includes("vision")
          ? {
              data: {
                setComputeInstanceSharing: {
                  computeInstance: {
                    id: "id-trainer",
                    updatedAt: "2025-03-01T11:00:00+00:00",
                    sharing: { mode: "SELECTED_PROJECTS", projects: [{ id: "p2", name: "vision", displayName: "Vision" }] },
                  },
                  userErrors: [],
                },
              },
            }
          : { data: { setComputeInstanceSharing: { computeInstance: null, userErrors: [{ field: ["sharing", "projects"], message: "name at least one project to share with", code: "REQUIRED" }] } } },
    });
    await screen.findByTestId("instance-row-trainer");
    fireEvent.click(screen.getByRole("button", { name: "Actions for Trainer" }));
    fireEvent.click(await screen.findByRole("menuitem", { name: /Manage Sharing/, hidden: true }));
    const dialog = await screen.findByRole("dialog", { name: "Manage Sharing" });
    fireEvent.click(within(dialog).getByRole("radio", { name: /Selected Projects/ }));
    fireEvent.click(within(dialog).getByRole("button", { name: "Save" }));
    // Checked before sending: at least one project.
    expect(await within(dialog).findByText("Choose at least one project to share with.")).toBeInTheDocument();
    expect(calls.some((c) => c.name === "InstanceSharingSet")).toBe(false);

    fireEvent.click(within(dialog).getByRole("combobox", { name: "Projects" }));
    fireEvent.click(await screen.findByRole("option", { name: /Vision/, hidden: true }));
    fireEvent.click(within(dialog).getByRole("button", { name: "Save" }));
    await waitFor(() =>
      expect(calls.find((c) => c.name === "InstanceSharingSet")?.variables).toEqual({
        id: "id-trainer",
        sharing: { mode: "SELECTED_PROJECTS", projects: ["vision"] },
      }),
    );
    // The row shows the new sharing at once.
    await waitFor(() => expect(within(screen.getByTestId("instance-row-trainer")).getByText("Shared with Vision")).toBeInTheDocument());
  });

  it("loads more with the cursor of the last row", async () => {
    const first = [row("c", { createdAt: "2025-03-03T00:00:00+00:00" }), row("b", { createdAt: "2025-03-02T00:00:00+00:00" })];
    const second = [row("a", { createdAt: "2025-03-01T00:00:00+00:00" })];
    const { calls } = setup({
      InstancesList: (variables) => (variables.after ? page(second, false, 3) : page(first, true, 3)),
    });
    await screen.findByTestId("instance-row-c");
    fireEvent.click(screen.getByRole("button", { name: /Load more/ }));
    await screen.findByTestId("instance-row-a");
    expect(calls.filter((c) => c.name === "InstancesList").map((c) => c.variables.after ?? null)).toEqual([null, "c-b"]);
    expect(screen.queryByRole("button", { name: /Load more/ })).toBeNull();
    expect(screen.getAllByTestId(/^instance-row-/).map((el) => el.dataset.testid)).toEqual(["instance-row-c", "instance-row-b", "instance-row-a"]);
  });

  it("shows each instance's owner, and lists only the caller's with Mine", async () => {
    const OTHERS = "Only the owner or a project admin may deploy compute instance \"theirs\".";
    const { calls } = setup({
      InstancesList: (variables) =>
        variables.mine
          ? page([row("own")])
          : page([
              row("own"),
              row("theirs", { owner: { username: "bob" }, actions: actions({ UPDATE: OTHERS, DEPLOY: OTHERS, DESTROY: OTHERS, DELETE: OTHERS, SHARE: OTHERS }) }),
              row("old", { owner: null }),
            ]),
    });
    await screen.findByTestId("instance-row-theirs");
    expect(within(screen.getByTestId("instance-row-own")).getByText(/\(you\)/)).toBeInTheDocument();
    expect(within(screen.getByTestId("instance-row-theirs")).getByText("bob")).toBeInTheDocument();
    expect(within(screen.getByTestId("instance-row-old")).getByText("No owner")).toBeInTheDocument();
    // Another member's: the menu offers nothing, with the API's reason.
    fireEvent.click(within(screen.getByTestId("instance-row-theirs")).getByRole("button", { name: "Actions for Theirs" }));
    const deploy = await screen.findByRole("menuitem", { name: /Deploy/, hidden: true });
    expect(deploy).toBeDisabled();
    expect(deploy).toHaveTextContent(OTHERS);
    // Mine: the API is asked for the caller's own only.
    fireEvent.click(screen.getByRole("radio", { name: "Mine" }));
    await waitFor(() => expect(screen.queryByTestId("instance-row-theirs")).toBeNull());
    expect(screen.getByTestId("instance-row-own")).toBeInTheDocument();
    expect(calls.filter((c) => c.name === "InstancesList").map((c) => c.variables.mine)).toEqual([null, true]);
  });

  it("has an empty state that leads to the catalog", async () => {
    setup({ InstancesList: page([]) });
    expect(await screen.findByText("No compute instances yet")).toBeInTheDocument();
    expect(screen.getByRole("link", { name: "Browse the catalog" })).toHaveAttribute("href", "/p/ml/catalog");
  });
});

describe("mergePage", () => {
  const edge = (name: string, createdAt: string) => ({ cursor: `c-${name}`, node: row(name, { createdAt }) });
  const connection = (edges: ReturnType<typeof edge>[], hasNextPage: boolean) =>
    ({ totalCount: 0, pageInfo: { hasNextPage, endCursor: null }, edges }) as unknown as Connection;

  it("keeps rows loaded further down when the first page is asked again, and drops the ones gone from its range", () => {
    const c = edge("c", "2025-03-03T00:00:00Z");
    const b = edge("b", "2025-03-02T00:00:00Z");
    const a = edge("a", "2025-03-01T00:00:00Z");
    const d = edge("d", "2025-03-04T00:00:00Z");
    const loaded = mergePage(mergePage([], connection([c, b], true), null), connection([a], false), b as never);
    expect(loaded.map((e) => e.node.name)).toEqual(["c", "b", "a"]);
    // Meanwhile d was created and c deleted: the first page now holds d and b.
    const refreshed = mergePage(loaded, connection([d, b], true), null);
    expect(refreshed.map((e) => e.node.name)).toEqual(["d", "b", "a"]);
  });
});
