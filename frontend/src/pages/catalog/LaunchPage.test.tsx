import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { LaunchPage } from "./LaunchPage";

// jsdom has no document.fonts; Mantine's autosizing Textarea listens to it.
(document as unknown as { fonts: unknown }).fonts ??= { addEventListener() {}, removeEventListener() {}, ready: Promise.resolve() };

const me = {
  data: {
    me: { id: "u1", username: "ada", isPlatformAdmin: false, memberships: [{ role: "MEMBER", project: { id: "p1", name: "ml", displayName: "ML" } }] },
    projects: [{ id: "p1", name: "ml", displayName: "ML" }],
  },
};

const definition = (name: string, type: string, extra: Record<string, unknown> = {}) => ({
  name,
  type,
  description: null,
  required: false,
  default: null,
  options: [],
  pattern: null,
  min: null,
  max: null,
  sensitive: false,
  ...extra,
});

const profile = {
  data: {
    computeProfile: {
      id: "prof-1",
      name: "a100-large",
      displayName: "A100 Large",
      description: "Eight GPUs for training",
      iconUrl: null,
      readmeHtml: "<p>Hello</p>",
      allocationType: "DEDICATED",
      resources: { cpu: "32", memory: "256Gi", storage: "1Ti", gpuCount: 8, gpuVendor: "NVIDIA", gpuModel: "A100" },
      labels: [],
      project: { id: "p1", name: "ml", displayName: "ML" },
      environmentTemplate: { id: "t1", name: "k8s-ns", displayName: "Namespace" },
      environmentTemplateVersion: {
        id: "v1",
        version: "1.0.0",
        inputs: [
          definition("gpu_type", "STRING"),
          definition("replicas", "NUMBER", { default: "1", min: 1, max: 4 }),
          definition("debug", "BOOLEAN", { default: "false" }),
          definition("region", "STRING", { required: true }),
        ],
      },
      inputSettings: [
        { name: "gpu_type", value: "a100", required: true, override: "RESTRICTED", allowedValues: ["a100", "h100"] },
        { name: "replicas", value: "2", required: false, override: "ALLOWED", allowedValues: [] },
        { name: "debug", value: null, required: false, override: "ALLOWED", allowedValues: [] },
        { name: "region", value: "eu-west", required: true, override: "NOT_ALLOWED", allowedValues: [] },
      ],
    },
  },
};

function setup(createAnswer: (variables: Record<string, unknown>) => { data?: unknown; error?: unknown }) {
  const fake = fakeClient({ Me: me, Projects: { data: { projects: me.data.projects } }, CatalogSku: profile, CatalogInstanceCreate: createAnswer });
  renderPage(
    <AuthProvider>
      <LaunchPage />
    </AuthProvider>,
    { client: fake.client, path: "/p/ml/catalog/prof-1/launch", pattern: "/p/:project/catalog/:profileId/launch" },
  );
  return fake;
}

const created = {
  data: { createComputeInstance: { computeInstance: { id: "ci-1", name: "trainer", status: "NOT_DEPLOYED" }, userErrors: [] } },
};

function sentInput(calls: { name: string; variables: Record<string, unknown> }[]) {
  const call = calls.find((c) => c.name === "CatalogInstanceCreate");
  return (call?.variables as { input: Record<string, unknown> } | undefined)?.input;
}

describe("LaunchPage", () => {
  it("shows only the inputs users may override: restricted ones as a select, fixed ones read-only", async () => {
    setup(() => created);
    await screen.findByRole("heading", { name: "Launch a compute instance" });
    // RESTRICTED: a select of the allowed values, the profile's value chosen.
    const gpuType = screen.getByRole("combobox", { name: /gpu_type/ });
    expect(gpuType).toHaveValue("a100");
    fireEvent.click(gpuType);
    const options = await screen.findAllByRole("option", { hidden: true });
    expect(options.map((o) => o.textContent)).toEqual(["a100", "h100"]);
    // ALLOWED: inputs by type, with the profile's value.
    expect(screen.getByRole("textbox", { name: "replicas" })).toHaveValue("2");
    expect(screen.getByRole("switch", { name: "debug" })).not.toBeChecked();
    // NOT_ALLOWED: no control, the value is shown read-only.
    expect(screen.queryByRole("textbox", { name: /region/ })).toBeNull();
    const fixed = screen.getByRole("table", { name: "Set by the profile" });
    expect(within(fixed).getByText("region")).toBeInTheDocument();
    expect(within(fixed).getByText("eu-west")).toBeInTheDocument();
  });

  it("asks for a name before sending anything", async () => {
    const { calls } = setup(() => created);
    await screen.findByRole("heading", { name: "Launch a compute instance" });
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    expect(await screen.findByText("Required")).toBeInTheDocument();
    expect(calls.some((c) => c.name === "CatalogInstanceCreate")).toBe(false);
  });

  it("saves with deploy false, sending only the overridable inputs", async () => {
    const { calls } = setup(() => created);
    await screen.findByRole("heading", { name: "Launch a compute instance" });
    fireEvent.change(screen.getByRole("textbox", { name: /^Name/ }), { target: { value: "trainer" } });
    fireEvent.click(screen.getByRole("switch", { name: "debug" }));
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(sentInput(calls)).toBeDefined());
    expect(sentInput(calls)).toEqual({
      project: "ml",
      profile: "prof-1",
      name: "trainer",
      displayName: null,
      description: null,
      labels: [],
      annotations: [],
      inputs: [
        { key: "gpu_type", value: "a100" },
        { key: "replicas", value: "2" },
        { key: "debug", value: "true" },
      ],
      deploy: false,
    });
  });

  it("deploys with deploy true, with the chosen restricted value", async () => {
    const { calls } = setup(() => created);
    await screen.findByRole("heading", { name: "Launch a compute instance" });
    fireEvent.change(screen.getByRole("textbox", { name: /^Name/ }), { target: { value: "trainer" } });
    fireEvent.click(screen.getByRole("combobox", { name: /gpu_type/ }));
    fireEvent.click(await screen.findByRole("option", { name: "h100", hidden: true }));
    fireEvent.click(screen.getByRole("button", { name: "Deploy" }));
    await waitFor(() => expect(sentInput(calls)).toBeDefined());
    const input = sentInput(calls)!;
    expect(input.deploy).toBe(true);
    expect(input.inputs).toContainEqual({ key: "gpu_type", value: "h100" });
  });

  it("shows the server's errors next to their fields, and the rest above the buttons", async () => {
    setup(() => ({
      data: {
        createComputeInstance: {
          computeInstance: null,
          userErrors: [
            { field: ["input", "name"], message: 'an instance named "trainer" already exists in this project', code: "TAKEN" },
            { field: ["input", "inputs", "1", "value"], message: 'input "replicas" must be at most 4', code: "INVALID" },
            { field: ["input", "labels", "0", "key"], message: "must be a label key", code: "INVALID" },
            { field: ["input", "profile"], message: "No such compute profile in this project's catalog.", code: "NOT_FOUND" },
          ],
        },
      },
    }));
    await screen.findByRole("heading", { name: "Launch a compute instance" });
    fireEvent.change(screen.getByRole("textbox", { name: /^Name/ }), { target: { value: "trainer" } });
    fireEvent.click(screen.getByRole("button", { name: "Add label" }));
    fireEvent.change(screen.getByLabelText("Labels 1 key"), { target: { value: "Bad Key" } });
    fireEvent.click(screen.getByRole("button", { name: "Deploy" }));

    const name = screen.getByRole("textbox", { name: /^Name/ });
    await waitFor(() => expect(name).toHaveAccessibleDescription(/already exists in this project/));
    expect(screen.getByRole("textbox", { name: "replicas" })).toHaveAccessibleDescription(/must be at most 4/);
    expect(screen.getByLabelText("Labels 1 key")).toHaveAccessibleDescription(/must be a label key/);
    expect(within(screen.getByRole("alert")).getByText(/No such compute profile/)).toBeInTheDocument();
  });
});
