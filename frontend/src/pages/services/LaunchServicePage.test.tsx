import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { Route, Routes } from "react-router-dom";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { meAnswer } from "../instance-templates/testing";
import { LaunchServicePage } from "./LaunchServicePage";

/** A compute instance of the caller's (`owner`: someone else's, whose actions the API refuses). */
function instance(id: string, name: string, status: string, services: unknown[] = [], owner = "me") {
  return {
    id,
    name,
    displayName: name,
    status,
    project: { name: "ml" },
    owner: { username: owner },
    actions: ["UPDATE", "DEPLOY", "DESTROY", "DELETE", "SHARE"].map((action) => ({ name: action, allowed: owner === "me" })),
    resources: { gpuCount: 2, gpuVendor: "NVIDIA", gpuModel: "A100" },
    services,
  };
}

const INSTANCES = {
  data: {
    computeInstances: {
      totalCount: 3,
      edges: [
        { node: instance("c1", "box", "SUCCESS", [{ id: "s0", name: "other", gpuCount: 1, status: "RUNNING" }]) },
        { node: instance("c2", "new-box", "NOT_DEPLOYED") },
        { node: instance("c3", "busy-box", "IN_PROGRESS") },
      ],
    },
  },
};

const TEMPLATES = {
  data: {
    instanceTemplates: [
      {
        id: "t-gpu",
        name: "jupyterlab-pytorch",
        displayName: "JupyterLab",
        description: null,
        vendor: "NVIDIA",
        image: "nvcr.io/nvidia/pytorch:25.01-py3",
        builtIn: true,
        command: ["jupyter", "lab", "--ServerApp.token={{generated_token}}"],
        ports: [{ name: "jupyter", port: 8888, protocol: "TCP", accessParams: [{ key: "token", value: "{{generated_token}}" }] }],
        env: [{ key: "HF_HOME", value: "/workspace/.cache/huggingface" }],
        project: null,
      },
      {
        id: "t-cpu",
        name: "ubuntu",
        displayName: "Ubuntu",
        description: null,
        vendor: "CPU",
        image: "ubuntu:24.04",
        builtIn: true,
        command: ["sleep", "infinity"],
        ports: [],
        env: [],
        project: null,
      },
    ],
  },
};

function render(answers: Parameters<typeof fakeClient>[0] = {}, path = "/p/ml/services/new?computeInstance=c1") {
  const fake = fakeClient({
    Me: meAnswer(false, "MEMBER"),
    ServicesComputeInstances: INSTANCES,
    ServiceLaunchTemplates: TEMPLATES,
    ...answers,
  });
  renderPage(
    <AuthProvider>
      <Routes>
        <Route path="services/new" element={<LaunchServicePage />} />
        <Route path="services/:id" element={<h1>Service page</h1>} />
      </Routes>
    </AuthProvider>,
    { client: fake.client, path },
  );
  return fake;
}

const gpuInput = () => screen.getByRole("textbox", { name: /^GPU count/ });

describe("launch service form", () => {
  it("preselects the compute instance, shows its GPUs, and says why others cannot be chosen", async () => {
    render();
    await screen.findByRole("heading", { name: "Launch service" });
    expect(screen.getByRole("combobox", { name: /^Compute instance/ })).toHaveValue("box");
    expect(screen.getByTestId("instance-gpus")).toHaveTextContent("2 × NVIDIA A100 GPUs; 1 held by its other service instances, 1 free");
    expect(screen.getByText(/2 of this project's 3 are not selectable/)).toBeInTheDocument();
    fireEvent.click(screen.getByRole("combobox", { name: /^Compute instance/ }));
    const option = await screen.findByRole("option", { name: /new-box \(Not Deployed: not deployed yet/, hidden: true });
    expect(option).toHaveAttribute("data-combobox-disabled", "true");
  });

  it("offers only compute instances the caller may run services in", async () => {
    render(
      {
        ServicesComputeInstances: {
          data: {
            computeInstances: {
              totalCount: 2,
              edges: [{ node: instance("c1", "box", "SUCCESS") }, { node: instance("c4", "olivias-box", "SUCCESS", [], "olivia") }],
            },
          },
        },
      },
      "/p/ml/services/new",
    );
    await screen.findByRole("heading", { name: "Launch service" });
    // the only one of the caller's is chosen; another member's cannot be, and says why
    expect(screen.getByRole("combobox", { name: /^Compute instance/ })).toHaveValue("box");
    fireEvent.click(screen.getByRole("combobox", { name: /^Compute instance/ }));
    const option = await screen.findByRole("option", {
      name: "olivias-box (olivia's: only its owner or a project admin may run services in it)",
      hidden: true,
    });
    expect(option).toHaveAttribute("data-combobox-disabled", "true");
  });

  it("defaults the GPU count by the template's vendor", async () => {
    render();
    await screen.findByRole("heading", { name: "Launch service" });
    fireEvent.click(screen.getByRole("radio", { name: "Ubuntu (CPU)" }));
    await waitFor(() => expect(gpuInput()).toHaveValue("0"));
    expect(screen.getByRole("textbox", { name: /^Name/ })).toHaveValue("ubuntu");
    fireEvent.click(screen.getByRole("radio", { name: "JupyterLab (NVIDIA)" }));
    await waitFor(() => expect(gpuInput()).toHaveValue("1"));
    expect(screen.getByRole("textbox", { name: /^Name/ })).toHaveValue("jupyterlab-pytorch");
  });

  it("shows QUOTA_EXCEEDED next to the GPU count, and sends no overrides it was not given", async () => {
    const { calls } = render({
      ServiceCreate: {
        data: {
          createServiceInstance: {
            serviceInstance: null,
            userErrors: [
              {
                field: ["input", "gpuCount"],
                message: 'compute instance "box" has 2 GPUs, 1 of them used by its other service instances: 2 requested, 1 free',
                code: "QUOTA_EXCEEDED",
              },
            ],
          },
        },
      },
    });
    await screen.findByRole("heading", { name: "Launch service" });
    fireEvent.click(screen.getByRole("radio", { name: "JupyterLab (NVIDIA)" }));
    fireEvent.change(gpuInput(), { target: { value: "2" } });
    fireEvent.change(screen.getByRole("textbox", { name: /^Name/ }), { target: { value: "lab" } });
    fireEvent.click(screen.getByRole("button", { name: "Launch" }));

    await waitFor(() => expect(gpuInput()).toHaveAccessibleDescription(expect.stringContaining("2 requested, 1 free")));
    expect(calls.find((c) => c.name === "ServiceCreate")?.variables).toEqual({
      input: {
        project: "ml",
        computeInstance: "c1",
        template: "t-gpu",
        name: "lab",
        displayName: null,
        gpuCount: 2,
        command: null,
        env: null,
        ports: null,
        storage: null,
        resources: null,
        gpuPartition: null,
        imagePullSecret: null,
        start: true,
      },
    });
  });

  it("sends the overrides changed in Advanced, places their errors, and opens the service once created", async () => {
    let attempt = 0;
    const { calls } = render({
      ServiceCreate: () => {
        attempt += 1;
        return attempt === 1
          ? {
              data: {
                createServiceInstance: {
                  serviceInstance: null,
                  userErrors: [
                    { field: ["input", "computeInstance"], message: "compute instance is DESTROYING", code: "INVALID_STATE" },
                    { field: ["input", "env", "1", "key"], message: "bad variable name", code: "INVALID" },
                  ],
                },
              },
            }
          : { data: { createServiceInstance: { serviceInstance: { id: "s9", name: "lab", displayName: "lab", status: "STOPPED" }, userErrors: [] } } };
      },
    });
    await screen.findByRole("heading", { name: "Launch service" });
    fireEvent.click(screen.getByRole("radio", { name: "JupyterLab (NVIDIA)" }));
    fireEvent.click(screen.getByRole("button", { name: /Advanced/ }));
    fireEvent.click(await screen.findByRole("button", { name: "Add environment variable" }));
    fireEvent.change(screen.getByLabelText("Environment variables 2 name"), { target: { value: "1BAD" } });
    fireEvent.change(screen.getByLabelText("Environment variables 2 value"), { target: { value: "x" } });
    fireEvent.click(screen.getByRole("checkbox", { name: /Start now/ }));
    fireEvent.click(screen.getByRole("button", { name: "Create" }));

    await waitFor(() =>
      expect(screen.getByLabelText("Environment variables 2 name")).toHaveAccessibleDescription(
        expect.stringContaining("bad variable name"),
      ),
    );
    expect(screen.getByRole("combobox", { name: /^Compute instance/ })).toHaveAccessibleDescription(
      expect.stringContaining("compute instance is DESTROYING"),
    );
    const input = calls.find((c) => c.name === "ServiceCreate")!.variables.input as Record<string, unknown>;
    expect(input).toMatchObject({
      command: null,
      ports: null,
      start: false,
      env: [
        { key: "HF_HOME", value: "/workspace/.cache/huggingface" },
        { key: "1BAD", value: "x" },
      ],
    });

    fireEvent.click(screen.getByRole("button", { name: "Create" }));
    expect(await screen.findByRole("heading", { name: "Service page" })).toBeInTheDocument();
  });

  it("sends a new volume kept on delete and CPU and memory, and places the server's errors there", async () => {
    const { calls } = render({
      ServiceCreate: {
        data: {
          createServiceInstance: {
            serviceInstance: null,
            userErrors: [
              { field: ["input", "resources", "cpuLimit"], message: 'must be within what compute instance "box" has: 8 CPU (16 asked)', code: "QUOTA_EXCEEDED" },
            ],
          },
        },
      },
    });
    await screen.findByRole("heading", { name: "Launch service" });
    fireEvent.click(screen.getByRole("radio", { name: "JupyterLab (NVIDIA)" }));
    fireEvent.click(screen.getByRole("button", { name: /Advanced/ }));
    const storage = within(await screen.findByTestId("storage-editor"));
    expect(storage.getByRole("radio", { name: "New volume" })).toBeChecked();
    fireEvent.change(storage.getByRole("textbox", { name: /Volume size/ }), { target: { value: "50Gi" } });
    fireEvent.click(storage.getByRole("radio", { name: /Keep the volume/ }));
    fireEvent.change(screen.getByRole("textbox", { name: "CPU limit" }), { target: { value: "16" } });
    fireEvent.change(screen.getByRole("textbox", { name: "Memory request" }), { target: { value: "8Gi" } });
    fireEvent.click(screen.getByRole("button", { name: "Launch" }));

    await waitFor(() =>
      expect(screen.getByRole("textbox", { name: "CPU limit" })).toHaveAccessibleDescription(expect.stringContaining("8 CPU (16 asked)")),
    );
    const input = calls.find((c) => c.name === "ServiceCreate")!.variables.input as Record<string, unknown>;
    expect(input).toMatchObject({
      command: null,
      storage: { mode: "NEW_VOLUME", size: "50Gi", reclaim: "KEEP", claimName: null, storageClass: null },
      resources: { cpuRequest: null, cpuLimit: "16", memoryRequest: "8Gi", memoryLimit: null },
    });
  });

  it("asks for a template and a name before sending", async () => {
    const { calls } = render();
    await screen.findByRole("heading", { name: "Launch service" });
    fireEvent.click(screen.getByRole("button", { name: "Launch" }));
    expect(await screen.findByText("Choose a template")).toBeInTheDocument();
    expect(screen.getByText("A name is required")).toBeInTheDocument();
    expect(calls.some((c) => c.name === "ServiceCreate")).toBe(false);
  });

  it("explains when no compute instance is deployed", async () => {
    render({
      ServicesComputeInstances: {
        data: { computeInstances: { totalCount: 1, edges: [{ node: instance("c2", "new-box", "NOT_DEPLOYED") }] } },
      },
    });
    expect(await screen.findByText("No deployed compute instance")).toBeInTheDocument();
    expect(within(document.body).getByRole("link", { name: "Go to compute instances" })).toHaveAttribute("href", "/p/ml/instances");
  });
});
