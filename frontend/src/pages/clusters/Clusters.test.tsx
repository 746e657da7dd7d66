import { notifications } from "@mantine/notifications";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { meAnswer } from "../instance-templates/testing";
import { ClusterDetailPage } from "./ClusterDetailPage";
import { ClusterEditPage, ClusterNewPage } from "./ClusterFormPage";
import { ClustersPage } from "./ClustersPage";
import { PlatformAdminOnly } from "./common";

const CLUSTER = {
  id: "k1",
  name: "gpu-east",
  displayName: "GPU East",
  driver: "KUBERNETES",
  isDefault: false,
  inCluster: false,
  hasKubeconfig: true,
  accessAddress: "gpu.example.com",
  gpuResourceNames: [{ vendor: "NVIDIA", resourceName: "nvidia.com/gpu" }],
  gpuResources: [
    { resourceName: "nvidia.com/gpu", gpuModel: "H100", partition: false, count: 8 },
    { resourceName: "nvidia.com/mig-1g.10gb", gpuModel: "H100", partition: true, count: 7 },
  ],
  status: "READY",
  statusMessage: null,
  serverVersion: "v1.31.2",
  nodes: [{ name: "n1", cpu: "64", memory: "512Gi", gpuResource: "nvidia.com/gpu", gpuCount: 8, gpuModel: "H100" }],
  checkedAt: "2025-01-01T00:00:00Z",
  createdAt: "2025-01-01T00:00:00Z",
  updatedAt: "2025-01-01T00:00:00Z",
};

function render(ui: React.ReactElement, path: string, pattern: string, answers: Parameters<typeof fakeClient>[0] = {}, admin = true) {
  const fake = fakeClient({ Me: meAnswer(admin), ...answers });
  renderPage(<AuthProvider>{ui}</AuthProvider>, { client: fake.client, path, pattern });
  return fake;
}

describe("clusters", () => {
  beforeEach(() => {
    vi.spyOn(notifications, "show").mockImplementation(() => "");
  });
  afterEach(() => vi.restoreAllMocks());

  it("tells people who are not platform admins that clusters are not theirs", async () => {
    render(
      <PlatformAdminOnly>
        <ClustersPage />
      </PlatformAdminOnly>,
      "/p/ml/studio/clusters",
      "/p/:project/studio/clusters",
      {},
      false,
    );
    expect(await screen.findByText(/Only platform admins manage clusters/)).toBeInTheDocument();
  });

  it("lists clusters and checks one", async () => {
    const { calls } = render(<ClustersPage />, "/p/ml/studio/clusters", "/p/:project/studio/clusters", {
      ClustersList: { data: { clusters: [{ ...CLUSTER, isDefault: true, name: "simulated", id: "k0", displayName: "Simulated", driver: "SIMULATED", nodes: [] }, CLUSTER] } },
      ClusterCheck: { data: { checkCluster: { cluster: CLUSTER, userErrors: [] } } },
    });
    const row = await screen.findByTestId("cluster-gpu-east");
    expect(within(row).getByText("Ready")).toBeInTheDocument();
    expect(within(row).getByText("8 GPUs (8 × H100)")).toBeInTheDocument();
    expect(within(screen.getByTestId("cluster-simulated")).getByText("Default")).toBeInTheDocument();
    fireEvent.click(within(row).getByRole("button", { name: "Actions for gpu-east" }));
    fireEvent.click(await screen.findByRole("menuitem", { name: "Check", hidden: true }));
    await waitFor(() => expect(calls.find((c) => c.name === "ClusterCheck")?.variables).toEqual({ id: "k1" }));
    await waitFor(() =>
      expect(notifications.show).toHaveBeenCalledWith(
        expect.objectContaining({ title: "GPU East: reachable", message: "Version v1.31.2 · 1 node · 8 GPUs (8 × H100)" }),
      ),
    );
  });

  it("registers a Kubernetes cluster with every field", async () => {
    const { calls } = render(<ClusterNewPage />, "/p/ml/studio/clusters/new", "/p/:project/studio/clusters/new", {
      ClusterCreate: {
        data: {
          createCluster: {
            cluster: null,
            userErrors: [{ field: ["input", "kubeconfig"], message: "is not a kubeconfig", code: "INVALID" }],
          },
        },
      },
    });
    await screen.findByRole("heading", { name: "Add Cluster" });
    fireEvent.change(screen.getByRole("textbox", { name: /^Name/ }), { target: { value: "gpu-east" } });
    fireEvent.change(screen.getByRole("textbox", { name: /^Display name/ }), { target: { value: "GPU East" } });
    fireEvent.change(screen.getByRole("textbox", { name: /^Kubeconfig/ }), { target: { value: "apiVersion: v1" } });
    fireEvent.change(screen.getByRole("textbox", { name: /^Context/ }), { target: { value: "east" } });
    fireEvent.change(screen.getByRole("textbox", { name: /^Access address/ }), { target: { value: "gpu.example.com" } });
    fireEvent.click(screen.getByRole("button", { name: "Add GPU resource name" }));
    fireEvent.click(screen.getByRole("combobox", { name: "GPU resource 1 vendor" }));
    fireEvent.click(await screen.findByRole("option", { name: "AMD", hidden: true }));
    fireEvent.change(screen.getByRole("textbox", { name: "GPU resource 1 name" }), { target: { value: "amd.com/gpu" } });
    fireEvent.click(screen.getByRole("switch", { name: /^Default cluster/ }));
    fireEvent.click(screen.getByRole("button", { name: "Save" }));

    await waitFor(() =>
      expect(screen.getByRole("textbox", { name: /^Kubeconfig/ })).toHaveAccessibleDescription(
        expect.stringContaining("is not a kubeconfig"),
      ),
    );
    expect(calls.find((c) => c.name === "ClusterCreate")?.variables).toEqual({
      input: {
        name: "gpu-east",
        driver: "KUBERNETES",
        displayName: "GPU East",
        kubeconfig: "apiVersion: v1",
        inCluster: false,
        context: "east",
        accessAddress: "gpu.example.com",
        gpuResourceNames: [{ vendor: "AMD", resourceName: "amd.com/gpu" }],
        isDefault: true,
      },
    });
  });

  it("never shows the stored kubeconfig, and keeps it unless replaced or removed", async () => {
    const { calls } = render(<ClusterEditPage />, "/p/ml/studio/clusters/k1/edit", "/p/:project/studio/clusters/:id/edit", {
      ClusterDetail: { data: { cluster: CLUSTER } },
      ClusterUpdate: { data: { updateCluster: { cluster: CLUSTER, userErrors: [] } } },
    });
    await screen.findByRole("heading", { name: "Edit GPU East" });
    expect(screen.getByRole("textbox", { name: /^Kubeconfig/ })).toHaveValue("");
    expect(screen.getByText(/A kubeconfig is stored/)).toBeInTheDocument();
    fireEvent.click(screen.getByRole("button", { name: "Save Changes" }));
    await waitFor(() => expect(calls.some((c) => c.name === "ClusterUpdate")).toBe(true));
    expect(calls.find((c) => c.name === "ClusterUpdate")?.variables).toEqual({
      input: {
        id: "k1",
        displayName: "GPU East",
        accessAddress: "gpu.example.com",
        inCluster: false,
        kubeconfig: null,
        context: null,
        gpuResourceNames: [{ vendor: "NVIDIA", resourceName: "nvidia.com/gpu" }],
        isDefault: null,
      },
    });
  });

  it("shows the GPU resources its nodes advertise, partitions marked", async () => {
    render(<ClusterDetailPage />, "/p/ml/studio/clusters/k1", "/p/:project/studio/clusters/:id", { ClusterDetail: { data: { cluster: CLUSTER } } });
    const resources = await screen.findByTestId("gpu-resources");
    expect(within(resources).getByText("nvidia.com/mig-1g.10gb").parentElement).toHaveTextContent("nvidia.com/mig-1g.10gb (partition) × 7 on H100");
    expect(within(resources).getByText("nvidia.com/gpu").parentElement).toHaveTextContent("nvidia.com/gpu × 8 on H100");
  });
});
