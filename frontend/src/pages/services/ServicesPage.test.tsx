import { notifications } from "@mantine/notifications";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { meAnswer } from "../instance-templates/testing";
import { ServicesPage } from "./ServicesPage";

const TOKEN = "0123456789abcdef0123456789abcdef";

/** A service instance's `actions` as the API answers them: all allowed but those `refused`, each
 * with the API's reason. */
function actions(refused: Partial<Record<"START" | "STOP" | "RESTART" | "DELETE", string>> = {}) {
  return (["START", "STOP", "RESTART", "DELETE"] as const).map((name) => ({ name, allowed: refused[name] === undefined, reason: refused[name] ?? null }));
}

const RUNNING = {
  START: "cannot start a service instance that is RUNNING: it is already running",
};
const STOPPED = {
  STOP: "cannot stop a service instance that is STOPPED: it is not running",
  RESTART: "cannot restart a service instance that is STOPPED: only a RUNNING one can be restarted (start it instead)",
};
const STARTING = {
  START: "cannot start while the service instance is STARTING: wait until the current step finishes",
  STOP: "cannot stop while the service instance is STARTING: wait until the current step finishes",
  RESTART: "cannot restart while the service instance is STARTING: wait until the current step finishes",
};
const DELETING = {
  START: "cannot start a service instance that is DELETING: it is being deleted",
  STOP: "cannot stop a service instance that is DELETING: it is being deleted",
  RESTART: "cannot restart a service instance that is DELETING: it is being deleted",
  DELETE: "cannot delete a service instance that is DELETING: it is being deleted",
};

function service(name: string, status: string, extra: Record<string, unknown> = {}) {
  return {
    id: `s-${name}`,
    name,
    displayName: name,
    templateName: "jupyterlab-pytorch",
    gpuCount: 1,
    status,
    statusMessage: null,
    createdAt: "2025-01-01T00:00:00Z",
    updatedAt: "2025-01-01T00:00:00Z",
    connect: [],
    actions: actions(),
    template: { id: "t1", displayName: "JupyterLab (PyTorch, NVIDIA)", vendor: "NVIDIA" },
    computeInstance: { id: "c1", name: "box", displayName: "Box", resources: { gpuVendor: "NVIDIA", gpuModel: "H100 80GB" } },
    owner: { username: "alice" },
    ...extra,
  };
}

const SERVICES = [
  service("lab", "RUNNING", {
    connect: [
      { port: "jupyter", url: `http://gpu.example.com:30888/?token=${TOKEN}` },
      { port: "ssh", url: "ssh -p 30022 root@gpu.example.com" },
    ],
    actions: actions(RUNNING),
  }),
  service("idle", "STOPPED", { actions: actions(STOPPED) }),
  service("booting", "STARTING", { actions: actions(STARTING) }),
  // Stopped in a compute instance that is not deployed: the API refuses Start too.
  service("orphan", "STOPPED", {
    actions: actions({ ...STOPPED, START: 'cannot start it: compute instance "box" is NOT_DEPLOYED; deploy it first' }),
  }),
  service("broken", "FAILED", { statusMessage: "image pull failed", actions: actions({ RESTART: STOPPED.RESTART.replace("STOPPED", "FAILED") }) }),
  service("going", "DELETING", { actions: actions(DELETING) }),
];

function list(nodes = SERVICES) {
  return {
    data: {
      serviceInstances: {
        totalCount: nodes.length,
        pageInfo: { hasNextPage: false, endCursor: null },
        edges: nodes.map((node) => ({ cursor: node.id, node })),
      },
    },
  };
}

const INSTANCES = {
  data: {
    computeInstances: {
      totalCount: 1,
      edges: [
        {
          node: {
            id: "c1",
            name: "box",
            displayName: "Box",
            status: "SUCCESS",
            project: { name: "ml" },
            owner: { username: "alice" },
            actions: [{ name: "UPDATE", allowed: true }],
            resources: { gpuCount: 4, gpuVendor: "NVIDIA", gpuModel: "A100" },
            services: [],
          },
        },
      ],
    },
  },
};

function render(answers: Parameters<typeof fakeClient>[0] = {}) {
  const fake = fakeClient({ Me: meAnswer(false, "MEMBER"), ServicesList: list(), ServicesComputeInstances: INSTANCES, ...answers });
  renderPage(
    <AuthProvider>
      <ServicesPage />
    </AuthProvider>,
    { client: fake.client, path: "/p/ml/services", pattern: "/p/:project/services" },
  );
  return fake;
}

function disabled(name: string): boolean {
  return screen.getByRole("button", { name }).getAttribute("aria-disabled") === "true";
}

describe("services table", () => {
  beforeEach(() => {
    vi.spyOn(notifications, "show").mockImplementation(() => "");
  });
  afterEach(() => vi.restoreAllMocks());

  it("enables each action as the API's actions say", async () => {
    render();
    await screen.findByTestId("service-lab");
    const expected: Record<string, [boolean, boolean, boolean, boolean]> = {
      // start, stop, restart, delete
      lab: [false, true, true, true],
      idle: [true, false, false, true],
      booting: [false, false, false, true],
      orphan: [false, false, false, true],
      broken: [true, true, false, true],
      going: [false, false, false, false],
    };
    for (const [name, [start, stop, restart, remove]] of Object.entries(expected)) {
      expect(disabled(`Start ${name}`), `start ${name}`).toBe(!start);
      expect(disabled(`Stop ${name}`), `stop ${name}`).toBe(!stop);
      expect(disabled(`Restart ${name}`), `restart ${name}`).toBe(!restart);
      expect(disabled(`Delete ${name}`), `delete ${name}`).toBe(!remove);
    }
  });

  it("says why an action is not possible with the API's reason, and does nothing when clicked", async () => {
    const { calls } = render();
    await screen.findByTestId("service-orphan");
    fireEvent.focus(screen.getByRole("button", { name: "Start orphan" }));
    expect(await screen.findByText('cannot start it: compute instance "box" is NOT_DEPLOYED; deploy it first')).toBeInTheDocument();
    fireEvent.click(screen.getByRole("button", { name: "Start orphan" }));
    expect(calls.some((c) => c.name === "ServiceStart")).toBe(false);
  });

  it("opens web links in a new tab with the token, and copies ssh commands", async () => {
    const writeText = vi.fn().mockResolvedValue(undefined);
    Object.defineProperty(navigator, "clipboard", { configurable: true, value: { writeText } });
    render();
    const row = await screen.findByTestId("service-lab");
    const link = within(row).getByRole("link", { name: /Connect to jupyter/ });
    expect(link).toHaveAttribute("href", `http://gpu.example.com:30888/?token=${TOKEN}`);
    expect(link).toHaveAttribute("target", "_blank");
    expect(link).toHaveAttribute("rel", "noopener noreferrer");
    expect(link).toHaveTextContent("jupyter");

    expect(within(row).getByText("ssh -p 30022 root@gpu.example.com")).toBeInTheDocument();
    fireEvent.click(within(row).getByRole("button", { name: "Copy ssh command for ssh" }));
    await waitFor(() => expect(writeText).toHaveBeenCalledWith("ssh -p 30022 root@gpu.example.com"));
    // A stopped row has no link: nothing answers there.
    expect(within(screen.getByTestId("service-idle")).getByText("Stopped: start it to connect")).toBeInTheDocument();
  });

  it("starts a service and shows the server's refusal as a notification", async () => {
    const { calls } = render({
      ServiceStart: {
        data: {
          startServiceInstance: {
            serviceInstance: null,
            userErrors: [{ field: ["id"], message: 'compute instance "box" has 4 GPUs, 4 used', code: "QUOTA_EXCEEDED" }],
          },
        },
      },
    });
    await screen.findByTestId("service-idle");
    fireEvent.click(screen.getByRole("button", { name: "Start idle" }));
    await waitFor(() =>
      expect(notifications.show).toHaveBeenCalledWith(
        expect.objectContaining({ color: "red", message: 'compute instance "box" has 4 GPUs, 4 used' }),
      ),
    );
    expect(calls.find((c) => c.name === "ServiceStart")?.variables).toEqual({ id: "s-idle" });
  });

  it("deletes after confirmation", async () => {
    const { calls } = render({ ServiceDelete: { data: { deleteServiceInstance: { deletedId: "s-idle", userErrors: [] } } } });
    await screen.findByTestId("service-idle");
    fireEvent.click(screen.getByRole("button", { name: "Delete idle" }));
    expect(calls.some((c) => c.name === "ServiceDelete")).toBe(false);
    const dialog = await screen.findByRole("dialog");
    fireEvent.click(within(dialog).getByRole("button", { name: "Delete" }));
    await waitFor(() => expect(calls.find((c) => c.name === "ServiceDelete")?.variables).toEqual({ id: "s-idle" }));
  });

  it("shows the live status of each row", async () => {
    render({
      ServiceStatusLive: (variables) =>
        variables.id === "s-booting"
          ? {
              data: {
                serviceInstanceStatus: {
                  status: "RUNNING",
                  message: null,
                  at: "2025-01-01T00:01:00Z",
                  instance: {
                    id: "s-booting",
                    status: "RUNNING",
                    statusMessage: null,
                    updatedAt: "2025-01-01T00:01:00Z",
                    connect: [{ port: "http", url: "http://gpu.example.com:30800/" }],
                    actions: actions(RUNNING),
                  },
                },
              },
            }
          : { data: undefined },
    });
    const row = await screen.findByTestId("service-booting");
    await waitFor(() => expect(within(row).getByText("Running")).toBeInTheDocument());
    expect(within(row).getByRole("link", { name: /Connect to http/ })).toHaveAttribute("href", "http://gpu.example.com:30800/");
    expect(disabled("Restart booting")).toBe(false);
    // The GPUs with their compute instance's model, not only the vendor.
    expect(within(row).getByText("1 × NVIDIA H100 80GB")).toBeInTheDocument();
  });

  it("gives every button an accessible name", async () => {
    render({});
    await screen.findByTestId("service-booting");
    const unnamed = screen.getAllByRole("button").filter((button) => !(button.getAttribute("aria-label") || button.textContent?.trim()));
    expect(unnamed.map((button) => button.outerHTML.slice(0, 120))).toEqual([]);
  });

  it("filters by compute instance and offers to launch when empty", async () => {
    const { calls } = render({ ServicesList: list([]) });
    expect(await screen.findByText("No service instances yet")).toBeInTheDocument();
    expect(screen.getAllByRole("link", { name: /Launch service/ })[0]).toHaveAttribute("href", "/p/ml/services/new");
    expect(calls.find((c) => c.name === "ServicesList")?.variables).toMatchObject({ project: "ml", computeInstance: null });

    fireEvent.click(screen.getByRole("combobox", { name: "Compute instance" }));
    fireEvent.click(await screen.findByRole("option", { name: "Box", hidden: true }));
    await waitFor(() =>
      expect(calls.filter((c) => c.name === "ServicesList").at(-1)?.variables).toMatchObject({ computeInstance: "c1" }),
    );
    expect(await screen.findByText("No service instances in this compute instance")).toBeInTheDocument();
    expect(screen.getAllByRole("link", { name: /Launch service/ })[0]).toHaveAttribute(
      "href",
      "/p/ml/services/new?computeInstance=c1",
    );
  });

  it("shows owners, keeps another member's token out of reach, and lists the caller's own with Mine", async () => {
    const OTHERS = (verb: string) => `Only the owner or a project admin may ${verb} service instance "bobs".`;
    const bobs = service("bobs", "RUNNING", {
      owner: { username: "bob" },
      // as the API answers another member: the link without its token, no action allowed
      connect: [{ port: "jupyter", url: "http://gpu.example.com:30999/" }],
      actions: actions({ START: OTHERS("start"), STOP: OTHERS("stop"), RESTART: OTHERS("restart"), DELETE: OTHERS("delete") }),
    });
    const { calls } = render({ ServicesList: (variables) => list(variables.mine ? [SERVICES[0]] : [SERVICES[0], bobs]) });
    const row = await screen.findByTestId("service-bobs");
    expect(within(row).getByText("bob")).toBeInTheDocument();
    expect(within(screen.getByTestId("service-lab")).getByText(/\(you\)/)).toBeInTheDocument();
    expect(within(row).getByRole("link", { name: /jupyter/ })).toHaveAttribute("href", "http://gpu.example.com:30999/");
    expect(disabled("Stop bobs")).toBe(true);
    fireEvent.click(screen.getByRole("radio", { name: "Mine" }));
    await waitFor(() => expect(screen.queryByTestId("service-bobs")).toBeNull());
    expect(calls.filter((c) => c.name === "ServicesList").map((c) => c.variables.mine)).toEqual([null, true]);
  });
});
