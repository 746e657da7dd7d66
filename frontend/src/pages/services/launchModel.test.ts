import { describe, expect, it } from "vitest";

import { initialLaunch, launchInput, launchReducer, partitionsFor, type Instance, type Template } from "./launchModel";

function instance(id: string, status: string): Instance {
  return {
    id,
    name: id,
    displayName: id,
    status,
    project: { name: "ml" },
    owner: { username: "me" },
    actions: [{ name: "UPDATE", allowed: true }],
    resources: { gpuCount: 2, gpuVendor: "NVIDIA", gpuModel: null },
    services: [],
  } as unknown as Instance;
}

const CPU = { id: "t-cpu", name: "ubuntu", vendor: "CPU", command: ["sleep", "infinity"], env: [], ports: [] } as unknown as Template;
const GPU = { id: "t-gpu", name: "lab", vendor: "NVIDIA", command: ["jupyter"], env: [], ports: [] } as unknown as Template;

describe("launch form model", () => {
  it("chooses the only deployed compute instance, and the template of the address", () => {
    const state = initialLaunch({ computeInstance: null, template: "t-cpu" }, [instance("a", "NOT_DEPLOYED"), instance("b", "SUCCESS")], [CPU, GPU]);
    expect(state).toMatchObject({ computeInstance: "b", templateId: "t-cpu", name: "ubuntu", gpuCount: 0, command: ["sleep", "infinity"] });
  });

  it("keeps what the person typed when another template is chosen", () => {
    let state = initialLaunch({ computeInstance: "b", template: null }, [instance("b", "SUCCESS")], [CPU, GPU]);
    state = launchReducer(state, { type: "setName", name: "mine" });
    state = launchReducer(state, { type: "chooseTemplate", template: GPU });
    expect(state).toMatchObject({ name: "mine", gpuCount: 1 });
    state = launchReducer(state, { type: "setGpuCount", gpuCount: 2 });
    state = launchReducer(state, { type: "chooseTemplate", template: CPU });
    expect(state).toMatchObject({ name: "mine", gpuCount: 2, command: ["sleep", "infinity"] });
    // The template's own command is not an override: it is not sent.
    expect(launchInput(state, "ml", CPU)).toMatchObject({ command: null, env: null, ports: null, gpuCount: 2 });
  });

  it("opens the advanced section for errors in it", () => {
    const state = initialLaunch({ computeInstance: "b", template: null }, [instance("b", "SUCCESS")], []);
    expect(launchReducer(state, { type: "setErrors", errors: { name: "taken" } }).advanced).toBe(false);
    expect(launchReducer(state, { type: "setErrors", errors: { "env.0.key": "bad" } }).advanced).toBe(true);
  });

  it("starts with the template's partition and pull secret and sends only a change of them", () => {
    const mig = { ...GPU, gpuPartition: "nvidia.com/mig-1g.10gb", imagePullSecret: "ngc" } as unknown as Template;
    let state = initialLaunch({ computeInstance: "b", template: null }, [instance("b", "SUCCESS")], [mig]);
    state = launchReducer(state, { type: "chooseTemplate", template: mig });
    expect(state).toMatchObject({ gpuPartition: "nvidia.com/mig-1g.10gb", pullSecret: "ngc" });
    expect(launchInput(state, "ml", mig)).toMatchObject({ gpuPartition: null, imagePullSecret: null });
    state = launchReducer(state, { type: "setGpuPartition", gpuPartition: "" });
    state = launchReducer(state, { type: "setPullSecret", pullSecret: "ghcr" });
    expect(launchInput(state, "ml", mig)).toMatchObject({ gpuPartition: "", imagePullSecret: "ghcr" });
  });

  it("offers the partitions of the instance's GPU model, each once", () => {
    const box = {
      ...instance("b", "SUCCESS"),
      resources: { gpuCount: 1, gpuVendor: "NVIDIA", gpuModel: "A100" },
      cluster: {
        gpuPartitions: [
          { resourceName: "nvidia.com/mig-1g.10gb", profile: "1g.10gb", gpuModel: "A100 80GB" },
          { resourceName: "nvidia.com/mig-1g.10gb", profile: "1g.10gb", gpuModel: "A100 40GB" },
          { resourceName: "nvidia.com/mig-1g.12gb", profile: "1g.12gb", gpuModel: "H100 96GB" },
        ],
      },
    } as unknown as Instance;
    expect(partitionsFor(box).map((p) => p.resourceName)).toEqual(["nvidia.com/mig-1g.10gb"]);
    expect(partitionsFor(instance("c", "SUCCESS"))).toEqual([]); // no cluster shown
  });
});
