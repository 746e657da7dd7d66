import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { InstancePage } from "./InstancePage";
import { actions, auth, instance, RUN_UNDER_WAY, stubFonts } from "./testData";

stubFonts();

function setup(answers: Parameters<typeof fakeClient>[0]) {
  const fake = fakeClient({ ...auth, ...answers });
  renderPage(
    <AuthProvider>
      <InstancePage />
    </AuthProvider>,
    { client: fake.client, path: "/p/ml/instances/ci-1", pattern: "/p/:project/instances/:id" },
  );
  return fake;
}

function headerStatus() {
  return within(screen.getByTestId("instance-status")).getByText(/.+/);
}

describe("InstancePage", () => {
  it("keeps input names whole: they break only when longer than their column", async () => {
    setup({ InstanceOverview: { data: { computeInstance: instance({ status: "SUCCESS" }) } } });
    await screen.findByRole("heading", { name: "Trainer" });
    // "word-break: break-all" cut names anywhere ("repl|icas"); normal breaking keeps words whole.
    const name = screen.getByText("replicas");
    expect(name).toHaveStyle({ wordBreak: "normal", overflowWrap: "break-word" });
  });

  it("disables what the API refuses, with the API's reason, and does nothing when clicked", async () => {
    const { calls } = setup({ InstanceOverview: { data: { computeInstance: instance({ status: "IN_PROGRESS", actions: actions(RUN_UNDER_WAY) }) } } });
    await screen.findByRole("heading", { name: "Trainer" });
    expect(headerStatus().closest("[data-status]")).toHaveAttribute("data-status", "IN_PROGRESS");

    const destroy = screen.getByRole("button", { name: "Destroy" });
    expect(destroy).toHaveAttribute("aria-disabled", "true");
    expect(destroy).toHaveAccessibleDescription(RUN_UNDER_WAY.DESTROY);
    fireEvent.click(destroy);
    expect(screen.queryByRole("dialog")).toBeNull();
    expect(calls.some((c) => c.name === "InstanceDestroy")).toBe(false);

    expect(screen.getByRole("button", { name: "Deploy" })).toHaveAccessibleDescription(RUN_UNDER_WAY.DEPLOY);
    expect(screen.getByRole("button", { name: "Delete" })).toHaveAccessibleDescription(RUN_UNDER_WAY.DELETE);
    // What the API allows stays possible.
    expect(screen.getByRole("link", { name: "Edit Configuration" })).toHaveAttribute("href", "/p/ml/instances/ci-1/edit");
    expect(screen.getByRole("button", { name: "Manage Sharing" })).not.toHaveAttribute("aria-disabled");
    // whose it is
    expect(screen.getByText(/\(you\)/).closest("[data-owner]")).toHaveAttribute("data-owner", "ada");
  });

  it("follows the API, not the status: a read-only share refuses every change", async () => {
    const readOnly = "This instance is shared with your project read-only: only its own project may change it.";
    setup({
      InstanceOverview: {
        data: {
          computeInstance: instance({
            status: "SUCCESS",
            actions: actions({ UPDATE: readOnly, DEPLOY: readOnly, DESTROY: readOnly, DELETE: readOnly, SHARE: readOnly }),
          }),
        },
      },
    });
    await screen.findByRole("heading", { name: "Trainer" });
    for (const name of ["Edit Configuration", "Deploy", "Destroy", "Manage Sharing", "Delete"]) {
      const button = screen.getByRole("button", { name });
      expect(button, name).toHaveAttribute("aria-disabled", "true");
      expect(button, name).toHaveAccessibleDescription(readOnly);
    }
  });

  it("lets a deployed instance be destroyed, after asking", async () => {
    const { calls } = setup({
      InstanceOverview: { data: { computeInstance: instance({ status: "SUCCESS", statusMessage: null, actions: actions() }) } },
      InstanceDestroy: {
        data: {
          destroyComputeInstance: {
            computeInstance: { id: "ci-1", status: "DESTROYING", statusMessage: null, updatedAt: "2025-03-01T11:00:00+00:00", actions: actions(RUN_UNDER_WAY) },
            userErrors: [],
          },
        },
      },
    });
    await screen.findByRole("heading", { name: "Trainer" });
    const destroy = screen.getByRole("button", { name: "Destroy" });
    expect(destroy).not.toHaveAttribute("aria-disabled");
    fireEvent.click(destroy);
    const dialog = await screen.findByRole("dialog", { name: "Destroy compute instance" });
    fireEvent.click(within(dialog).getByRole("button", { name: "Destroy" }));
    await waitFor(() => expect(calls.find((c) => c.name === "InstanceDestroy")?.variables).toEqual({ id: "ci-1" }));
  });

  it("shows the live status as it comes: an event changes the badge and its message", async () => {
    setup({
      InstanceOverview: { data: { computeInstance: instance({ status: "WAITING", statusMessage: null }) } },
      InstanceStatusLive: {
        data: {
          computeInstanceStatus: {
            status: "SUCCESS",
            message: "deployed in 42s",
            at: "2025-03-01T10:05:00+00:00",
            instance: instance({
              status: "SUCCESS",
              statusMessage: "deployed in 42s",
              updatedAt: "2025-03-01T10:05:00+00:00",
              outputs: [{ key: "namespace", value: "ml-trainer" }],
              actions: actions(),
            }),
          },
        },
      },
    });
    await screen.findByRole("heading", { name: "Trainer" });
    await waitFor(() => expect(headerStatus().closest("[data-status]")).toHaveAttribute("data-status", "SUCCESS"));
    expect(headerStatus()).toHaveTextContent("Success");
    expect(screen.getByTestId("instance-status-message")).toHaveTextContent("deployed in 42s");
    // The rest of the page follows the event's instance: its outputs, and (its actions say) Destroy is now possible.
    expect(within(screen.getByRole("table", { name: "Outputs" })).getByText("ml-trainer")).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Destroy" })).not.toHaveAttribute("aria-disabled");
  });

  it("after a reconnect, shows what was replayed in order, and says so when changes were missed", async () => {
    const at = (minute: number) => `2025-03-01T10:${String(minute).padStart(2, "0")}:00+00:00`;
    const statusEvent = (status: string, minute: number, cursor: string, source: string, missedEvents = false) => ({
      data: {
        computeInstanceStatus: {
          status,
          message: null,
          at: at(minute),
          cursor,
          source,
          missedEvents,
          instance: instance({ status, statusMessage: null, updatedAt: at(minute), actions: actions() }),
        },
      },
    });
    setup({
      InstanceOverview: { data: { computeInstance: instance({ status: "WAITING", statusMessage: null }) } },
      InstanceStatusLive: [
        statusEvent("WAITING", 0, "3", "SNAPSHOT"),
        statusEvent("IN_PROGRESS", 1, "4", "REPLAY"),
        statusEvent("SUCCESS", 2, "6", "REPLAY"),
        // later the socket stayed down longer than the server keeps events
        statusEvent("DESTROYING", 30, "90", "SNAPSHOT", true),
      ],
    });
    await screen.findByRole("heading", { name: "Trainer" });
    await waitFor(() => expect(headerStatus().closest("[data-status]")).toHaveAttribute("data-status", "DESTROYING"));
    const updates = screen.getByRole("region", { name: "Status updates" });
    expect([...updates.querySelectorAll(".mantine-Timeline-itemTitle")].map((title) => title.textContent)).toEqual([
      "Waiting",
      "In Progress",
      "Success",
      "Destroying",
    ]);
    expect(within(updates).getAllByTestId("status-updates-missed")).toHaveLength(1);
  });

  it("tells that the profile changed since the snapshot, and lists runs newest first", async () => {
    setup({
      InstanceOverview: {
        data: {
          computeInstance: instance({
            status: "FAILED",
            statusMessage: "the namespace could not be created",
            outdated: true,
            runs: [
              { id: "r2", action: "DEPLOY", status: "FAILED", message: "quota exceeded", attempts: 2, createdAt: "2025-03-01T10:10:00+00:00", startedAt: null, finishedAt: null },
              { id: "r1", action: "DEPLOY", status: "SUCCEEDED", message: null, attempts: 1, createdAt: "2025-03-01T10:00:00+00:00", startedAt: null, finishedAt: null },
            ],
          }),
        },
      },
    });
    await screen.findByRole("heading", { name: "Trainer" });
    expect(screen.getByTestId("outdated-notice")).toHaveTextContent("The compute profile changed");
    const rows = within(screen.getByRole("table", { name: "Runs" })).getAllByRole("row");
    expect(rows[1]).toHaveTextContent("quota exceeded");
    expect(rows[2]).toHaveTextContent("Succeeded");
  });

  it("links services and disables Launch service until the instance is deployed", async () => {
    setup({
      InstanceOverview: {
        data: {
          computeInstance: instance({
            status: "NOT_DEPLOYED",
            statusMessage: null,
            runs: [],
            services: [],
          }),
        },
      },
    });
    await screen.findByRole("heading", { name: "Trainer" });
    const services = screen.getByRole("region", { name: "Services" });
    expect(within(services).getByRole("link", { name: "Service Instances" })).toHaveAttribute("href", "/p/ml/services");
    const launch = within(services).getByRole("button", { name: "Launch service" });
    expect(launch).toHaveAttribute("aria-disabled", "true");
    expect(launch).toHaveAccessibleDescription(/once the status is Success/);
  });

  it("offers Launch service as a link to the new service page of this instance once deployed", async () => {
    setup({
      InstanceOverview: {
        data: {
          computeInstance: instance({
            status: "SUCCESS",
            statusMessage: null,
            services: [
              { id: "s1", name: "jupyter", displayName: "Jupyter", status: "RUNNING", statusMessage: null, templateName: "jupyterlab", template: { id: "t1", displayName: "JupyterLab" } },
            ],
            actions: actions({
              DESTROY: "cannot destroy an instance that runs service instances (jupyter): delete them first (their workspaces would be lost with the instance)",
              DELETE: "cannot delete an instance that runs service instances (jupyter): delete them first (their workspaces would be lost with the instance)",
            }),
          }),
        },
      },
    });
    await screen.findByRole("heading", { name: "Trainer" });
    const services = screen.getByRole("region", { name: "Services" });
    expect(within(services).getByRole("link", { name: "Launch service" })).toHaveAttribute("href", "/p/ml/services/new?computeInstance=ci-1");
    expect(within(services).getByText("Jupyter")).toBeInTheDocument();
    expect(within(services).getByText("JupyterLab")).toBeInTheDocument();
    // Its services must go first: the API refuses Destroy and Delete, and the buttons say why.
    expect(screen.getByRole("button", { name: "Destroy" })).toHaveAccessibleDescription(/delete them first/);
  });
});
