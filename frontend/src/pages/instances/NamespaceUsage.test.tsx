import { screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { fakeClient, renderPage } from "../../test/render";
import { NamespaceUsagePanel, quantity } from "./NamespaceUsage";

const USAGE = {
  data: {
    computeInstance: {
      id: "c1",
      services: [{ id: "s1", name: "lab" }],
      namespaceUsage: {
        namespace: "ml-box-1a2b3c4d",
        problem: null,
        quotas: [
          {
            name: "compute",
            uses: [
              { resource: "requests.cpu", hard: "8", used: "2" },
              { resource: "requests.storage", hard: "200Gi", used: "200Gi" },
            ],
          },
        ],
        volumeClaims: [
          { name: "lab-workspace", size: "30Gi", storageClass: null, phase: "Bound", serviceId: "s1", keptFrom: null, keep: true },
          { name: "old-workspace", size: "170Gi", storageClass: "fast-ssd", phase: "Bound", serviceId: null, keptFrom: "old", keep: false },
        ],
      },
    },
  },
};

describe("namespace usage", () => {
  it("reads quantities as Kubernetes writes them", () => {
    expect(quantity("500m")).toBe(0.5);
    expect(quantity("2Gi")).toBe(2 * 2 ** 30);
    expect(quantity("lots")).toBeNull();
  });

  it("shows the quota's use of each resource and whose each volume claim is", async () => {
    const { client } = fakeClient({ InstanceNamespaceUsage: USAGE });
    renderPage(<NamespaceUsagePanel instanceId="c1" base="/p/ml" />, { client });
    const quota = await screen.findByRole("table", { name: "Quota compute" });
    const cpu = within(quota).getByText("requests.cpu").closest("tr")!;
    expect(within(cpu).getAllByRole("cell").map((cell) => cell.textContent)).toEqual(["requests.cpu", "2", "8", ""]);
    expect(within(quota).getByRole("progressbar", { name: "requests.cpu 25% used" })).toBeInTheDocument();
    expect(within(quota).getByRole("progressbar", { name: "requests.storage 100% used" })).toBeInTheDocument();
    const claims = screen.getByRole("table", { name: "Volume claims" });
    expect(within(claims).getByRole("link", { name: "lab" })).toHaveAttribute("href", "/p/ml/services/s1");
    expect(within(claims).getByText("kept on delete")).toBeInTheDocument();
    expect(within(claims).getByText(/kept from “old”; a new service may mount it/)).toBeInTheDocument();
    expect(within(claims).getByText("class fast-ssd")).toBeInTheDocument();
  });

  it("says why the cluster could not be read", async () => {
    const problem = { ...USAGE.data.computeInstance.namespaceUsage, problem: "the cluster could not be read: connection refused", quotas: [], volumeClaims: [] };
    const { client } = fakeClient({ InstanceNamespaceUsage: { data: { computeInstance: { ...USAGE.data.computeInstance, namespaceUsage: problem } } } });
    renderPage(<NamespaceUsagePanel instanceId="c1" base="/p/ml" />, { client });
    expect(await screen.findByText("the cluster could not be read: connection refused")).toBeInTheDocument();
  });
});
