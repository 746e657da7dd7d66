import { screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { auth, project } from "../instances/testData";
import { DashboardPage } from "./DashboardPage";

const count = (totalCount: number) => ({ totalCount });

function overview(nodes: { id: string; name: string; status: string }[], catalog = 3) {
  const by = (status: string) => count(nodes.filter((n) => n.status === status).length);
  return {
    data: {
      notDeployed: by("NOT_DEPLOYED"),
      waiting: by("WAITING"),
      inProgress: by("IN_PROGRESS"),
      success: by("SUCCESS"),
      failed: by("FAILED"),
      destroying: by("DESTROYING"),
      recent: {
        totalCount: nodes.length,
        edges: nodes.map((n) => ({
          node: {
            ...n,
            displayName: n.name,
            statusMessage: null,
            profileName: "a100-large",
            createdAt: "2025-03-01T10:00:00+00:00",
            updatedAt: "2025-03-01T10:00:00+00:00",
            project,
          },
        })),
      },
      catalog: Array.from({ length: catalog }, (_, i) => ({ id: `sku-${i}` })),
    },
  };
}

function setup(answers: Parameters<typeof fakeClient>[0]) {
  const fake = fakeClient({ ...auth, ...answers });
  renderPage(
    <AuthProvider>
      <DashboardPage />
    </AuthProvider>,
    { client: fake.client, path: "/p/ml/dashboard", pattern: "/p/:project/dashboard" },
  );
  return fake;
}

function liveEvent(id: string, name: string, status: string, at: string, cursor: string, source: string) {
  return {
    data: {
      computeInstanceEvents: {
        status,
        message: null,
        at,
        cursor,
        source,
        missedEvents: false,
        instance: { id, name, displayName: name, updatedAt: at, project, owner: null, actions: [] },
      },
    },
  };
}

const countOf = (status: string) => within(screen.getByTestId(`count-${status}`)).getByText(/^\d+$/).textContent;

describe("DashboardPage", () => {
  it("counts instances per status and moves the counts with live events", async () => {
    setup({
      DashboardOverview: overview([
        { id: "a", name: "alpha", status: "WAITING" },
        { id: "b", name: "beta", status: "SUCCESS" },
      ]),
      InstanceEvents: {
        data: {
          computeInstanceEvents: {
            status: "IN_PROGRESS",
            message: "applying",
            at: "2025-03-01T10:05:00+00:00",
            instance: { id: "a", name: "alpha", displayName: "alpha", updatedAt: "2025-03-01T10:05:00+00:00", project },
          },
        },
      },
    });
    await screen.findByTestId("count-WAITING");
    await waitFor(() => expect(countOf("IN_PROGRESS")).toBe("1"));
    expect(countOf("WAITING")).toBe("0");
    expect(countOf("SUCCESS")).toBe("1");
    expect(screen.getByTestId("sku-count")).toHaveTextContent("3 SKUs");
    // The feed tells the change; the instance's row follows it.
    const feed = screen.getByRole("region", { name: "Recent changes" });
    expect(within(feed).getByText("applying")).toBeInTheDocument();
    expect(within(screen.getByTestId("recent-alpha")).getByText("In Progress")).toBeInTheDocument();
    expect(screen.getByRole("link", { name: "Compute Instances" })).toHaveAttribute("href", "/p/ml/instances");
  });

  it("applies the snapshot and what was replayed after a reconnect; the feed has the changes only", async () => {
    const fake = setup({
      DashboardOverview: overview([
        { id: "a", name: "alpha", status: "WAITING" },
        { id: "b", name: "beta", status: "SUCCESS" },
      ]),
      InstanceEvents: [
        liveEvent("a", "alpha", "WAITING", "2025-03-01T10:00:00+00:00", "4", "SNAPSHOT"),
        liveEvent("b", "beta", "SUCCESS", "2025-03-01T10:00:00+00:00", "4", "SNAPSHOT"),
        liveEvent("a", "alpha", "IN_PROGRESS", "2025-03-01T10:05:00+00:00", "5", "REPLAY"),
        liveEvent("a", "alpha", "SUCCESS", "2025-03-01T10:06:00+00:00", "6", "REPLAY"),
      ],
    });
    await screen.findByTestId("count-WAITING");
    await waitFor(() => expect(countOf("SUCCESS")).toBe("2"));
    expect(countOf("WAITING")).toBe("0");
    expect(within(screen.getByTestId("recent-alpha")).getByText("Success")).toBeInTheDocument();
    const feed = screen.getByRole("region", { name: "Recent changes" });
    // the two replayed changes, newest first; the snapshots are no change
    expect(within(feed).getAllByRole("listitem")).toHaveLength(2);
    expect(within(feed).getAllByRole("link").map((link) => link.textContent)).toEqual(["alpha", "alpha"]);
    // nothing was missed: the counts were not asked again
    expect(fake.calls.filter((call) => call.name === "DashboardOverview")).toHaveLength(1);
  });

  it("asks for the counts again when the server says events were missed", async () => {
    const fake = setup({
      DashboardOverview: overview([{ id: "a", name: "alpha", status: "WAITING" }]),
      InstanceEvents: [{ data: { computeInstanceEvents: { ...liveEvent("a", "alpha", "SUCCESS", "2025-03-01T10:09:00+00:00", "40", "SNAPSHOT").data.computeInstanceEvents, missedEvents: true } } }],
    });
    await screen.findByTestId("count-WAITING");
    await waitFor(() => expect(fake.calls.filter((call) => call.name === "DashboardOverview")).toHaveLength(2));
    expect(countOf("SUCCESS")).toBe("1");
    expect(screen.getByText(/Nothing changed since you opened this page/)).toBeInTheDocument();
  });

  it("welcomes a new project with a way to the catalog", async () => {
    setup({ DashboardOverview: overview([], 0) });
    expect(await screen.findByText("No compute instances yet")).toBeInTheDocument();
    expect(screen.getAllByRole("link", { name: /Browse the catalog/ })[0]).toHaveAttribute("href", "/p/ml/catalog");
    expect(screen.getByTestId("sku-count")).toHaveTextContent("0 SKUs");
  });
});
