import { describe, expect, it } from "vitest";

import { initialWizard, wizardReducer, type Template } from "./wizardModel";

const TEMPLATE = {
  id: "t1",
  name: "ns",
  displayName: "Namespace",
  builtIn: false,
  versions: [
    { id: "v0", version: "0.9.0", state: "DRAFT", createdAt: "", inputs: [], outputs: [] },
    {
      id: "v1",
      version: "1.0.0",
      state: "ACTIVE",
      createdAt: "",
      inputs: [{ name: "team", type: "STRING", description: null, required: true, default: null, options: [], pattern: null, min: null, max: null, sensitive: false }],
      outputs: [{ name: "namespace", description: null }],
    },
  ],
} as unknown as Template;

describe("profile wizard state", () => {
  it("chooses a template's first active version with fresh settings, and forgets the errors it answers", () => {
    let state = initialWizard("create", null);
    state = wizardReducer(state, { type: "setErrors", errors: { environmentTemplate: "Choose one", name: "Required" } });
    state = wizardReducer(state, { type: "chooseTemplate", template: TEMPLATE });
    expect(state.values).toMatchObject({ templateId: "t1", versionId: "v1" });
    expect(state.values.inputs.team).toEqual({ value: "", required: true, override: "ALLOWED", allowedValues: [] });
    expect(state.values.outputs.namespace).toEqual({ visible: true, displayName: "" });
    expect(state.errors).toEqual({ name: "Required" });
  });

  it("makes a profile without GPUs a CPU one, and brings a GPU vendor back with GPUs", () => {
    let state = initialWizard("create", null);
    state = wizardReducer(state, { type: "setGpuCount", gpuCount: 2 });
    expect(state.values).toMatchObject({ gpuCount: 2, gpuVendor: "NVIDIA" });
    state = wizardReducer(state, { type: "setGpuCount", gpuCount: 0 });
    expect(state.values).toMatchObject({ gpuCount: 0, gpuVendor: "CPU" });
  });

  it("forgets the errors of a changed field and of the fields under it; remembers the furthest step", () => {
    let state = initialWizard("create", null);
    state = wizardReducer(state, { type: "setErrors", errors: { "labels.0.key": "bad", labelsExtra: "kept" } });
    state = wizardReducer(state, { type: "change", patch: { labels: [] }, fields: ["labels"] });
    expect(state.errors).toEqual({ labelsExtra: "kept" });
    state = wizardReducer(state, { type: "goTo", step: 2 });
    state = wizardReducer(state, { type: "goTo", step: 1 });
    expect(state).toMatchObject({ active: 1, visited: 2 });
  });
});
