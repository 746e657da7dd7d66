import { fireEvent, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";

import { lastCall, renderStudio } from "../profiles/testUtils";
import { AddVersionPage } from "./AddVersionPage";
import { documentRanges, parseResourceProblem } from "./yamlProblems";

vi.setConfig({ testTimeout: 30_000 });

const YAML = `apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
# the quota
apiVersion: v1
kind: ResourceQuota
metadata:
  name: compute
spec:
  hard:
    pods: "{{ inputs.maxPods }}"
`;

const TEMPLATE = {
  id: "t1",
  name: "team-ns",
  displayName: "Team namespace",
  description: null,
  builtIn: false,
  createdAt: "2026-01-01T00:00:00",
  updatedAt: "2026-01-01T00:00:00",
  project: { id: "p1", name: "ml", displayName: "Machine Learning" },
  versions: [
    {
      id: "v1",
      version: "1.0.0",
      state: "ACTIVE",
      createdAt: "2026-01-01T00:00:00",
      resources: YAML,
      inputs: [
        {
          name: "maxPods",
          type: "NUMBER",
          description: "Pods at most",
          required: false,
          default: "100",
          options: [],
          pattern: null,
          min: 1,
          max: null,
          sensitive: false,
        },
      ],
      outputs: [{ name: "namespace", description: null, value: "{{ instance.namespace }}" }],
    },
  ],
};

const ROUTES = [
  { path: "studio/templates/:id/versions/new", element: <AddVersionPage /> },
  { path: "studio/templates/:id", element: <p>Template page</p> },
];

const PROBLEMS = {
  data: {
    addEnvironmentTemplateVersion: {
      version: null,
      userErrors: [
        { field: ["input", "version"], message: 'version "1.0.0" already exists', code: "TAKEN" },
        {
          field: ["input", "resources"],
          message: 'document 2 (ResourceQuota compute), spec.hard.pods: unknown variable "inputs.maxPod" (did you mean "inputs.maxPods"?)',
          code: "INVALID",
        },
        { field: ["input", "resources"], message: "document 1 (Namespace {{ instance.namespace }}): apiVersion must be v1", code: "INVALID" },
        { field: ["input", "inputs", "0", "min"], message: "min applies to NUMBER inputs only", code: "INVALID" },
        { field: ["input", "outputs", "0", "value"], message: 'unknown variable "instance.nam"', code: "INVALID" },
        { field: ["input", "template"], message: "No such environment template.", code: "NOT_FOUND" },
      ],
    },
  },
};

function editor(): HTMLTextAreaElement {
  return screen.getAllByLabelText(/^Resources \(YAML\)/).find((el) => el.tagName === "TEXTAREA") as HTMLTextAreaElement;
}

describe("yaml problems", () => {
  it("reads the document, object and field out of the server's messages", () => {
    expect(parseResourceProblem("document 2 (ResourceQuota compute), spec.hard.pods: must be a string")).toEqual({
      document: 2,
      object: "ResourceQuota compute",
      path: "spec.hard.pods",
      message: "must be a string",
    });
    expect(parseResourceProblem("invalid YAML at line 3, column 5: mapping values are not allowed here")).toEqual({
      line: 3,
      column: 5,
      message: "mapping values are not allowed here",
    });
    expect(parseResourceProblem("must hold at least one Kubernetes manifest")).toEqual({
      message: "must hold at least one Kubernetes manifest",
    });
    // Comment-only documents are not counted, as the server does not count them.
    expect(documentRanges("---\n# nothing\n---\na: 1\nb: 2\n---\nc: 3\n")).toEqual([
      { start: 3, end: 4 },
      { start: 6, end: 6 },
    ]);
  });
});

describe("Add Version", () => {
  it("asks for the version and the manifests before sending", async () => {
    const user = userEvent.setup({ delay: null });
    const { calls } = renderStudio("/p/ml/studio/templates/t1/versions/new", ROUTES, {
      EnvTemplateDetail: { data: { environmentTemplate: { ...TEMPLATE, versions: [] } } },
    });
    await user.click(await screen.findByRole("button", { name: "Add Version" }));
    expect(screen.getAllByLabelText(/^Version/).find((el) => el.tagName === "INPUT")).toHaveAttribute("aria-invalid", "true");
    expect(screen.getByText("Write at least one Kubernetes manifest")).toBeInTheDocument();
    expect(calls.some((c) => c.name === "EnvTemplateAddVersion")).toBe(false);
  });

  it("sends the version and shows the server's errors at their document and field", async () => {
    const user = userEvent.setup({ delay: null });
    const { calls } = renderStudio("/p/ml/studio/templates/t1/versions/new?from=v1", ROUTES, {
      EnvTemplateDetail: { data: { environmentTemplate: TEMPLATE } },
      EnvTemplateAddVersion: PROBLEMS,
    });
    // A copy of version 1.0.0: its manifests, inputs and outputs.
    await screen.findByText(/Starting from a copy of version 1.0.0/);
    expect(editor()).toHaveValue(YAML);
    expect(screen.getByLabelText("Input 1 name")).toHaveValue("maxPods");
    expect(screen.getByLabelText("Output 1 value")).toHaveValue("{{ instance.namespace }}");

    const version = screen.getAllByLabelText(/^Version/).find((el) => el.tagName === "INPUT")!;
    await user.type(version, "1.0.0");
    await user.click(screen.getByRole("button", { name: "Add output" }));
    await user.type(screen.getByLabelText("Output 2 name"), "pods");
    fireEvent.change(screen.getByLabelText("Output 2 value"), { target: { value: "{{ inputs.maxPods }}" } });
    await user.click(screen.getByRole("button", { name: "Add Version" }));

    expect(lastCall(calls, "EnvTemplateAddVersion")).toEqual({
      input: {
        template: "t1",
        version: "1.0.0",
        state: "DRAFT",
        resources: YAML,
        inputs: [
          {
            name: "maxPods",
            type: "NUMBER",
            description: "Pods at most",
            required: false,
            default: "100",
            options: null,
            pattern: null,
            min: 1,
            max: null,
            sensitive: false,
          },
        ],
        outputs: [
          { name: "namespace", value: "{{ instance.namespace }}", description: null },
          { name: "pods", value: "{{ inputs.maxPods }}", description: null },
        ],
      },
    });

    // Each resources problem is listed next to the editor with its document and field.
    const list = await screen.findByTestId("resource-problems");
    const items = within(list).getAllByRole("listitem");
    expect(items).toHaveLength(2);
    expect(items[0]).toHaveTextContent("Document 2 (ResourceQuota compute) › spec.hard.pods");
    expect(items[0]).toHaveTextContent('unknown variable "inputs.maxPod" (did you mean "inputs.maxPods"?)');
    expect(items[1]).toHaveTextContent("Document 1 (Namespace {{ instance.namespace }})");
    expect(items[1]).toHaveTextContent("apiVersion must be v1");
    // The editor is in error, and the lines of the documents with problems are marked.
    expect(editor()).toHaveAttribute("aria-invalid", "true");
    const marked = Array.from(screen.getByTestId("yaml-gutter").querySelectorAll("[data-error-line]")).map((el) => el.textContent);
    expect(marked).toEqual(["1", "2", "3", "4", "7", "8", "9", "10", "11", "12", "13"]);
    // Going to a document selects its first line.
    await user.click(within(list).getByRole("button", { name: "Go to document 2" }));
    expect(editor().selectionStart).toBe(YAML.indexOf("apiVersion: v1\nkind: ResourceQuota"));

    // The other errors are at their fields.
    expect(screen.getByText('version "1.0.0" already exists')).toBeInTheDocument();
    expect(screen.getByLabelText("Input 1 min")).toHaveAttribute("aria-invalid", "true");
    expect(screen.getByText("min applies to NUMBER inputs only")).toBeInTheDocument();
    expect(screen.getByLabelText("Output 1 value")).toHaveAttribute("aria-invalid", "true");
    expect(screen.getByText("template: No such environment template.")).toBeInTheDocument();
  });

  it("goes to the template once the version is added", async () => {
    const user = userEvent.setup({ delay: null });
    const { calls } = renderStudio("/p/ml/studio/templates/t1/versions/new", ROUTES, {
      EnvTemplateDetail: { data: { environmentTemplate: TEMPLATE } },
      EnvTemplateAddVersion: { data: { addEnvironmentTemplateVersion: { version: { id: "v2", version: "2.0.0", state: "ACTIVE" }, userErrors: [] } } },
    });
    const version = (await screen.findAllByLabelText(/^Version/)).find((el) => el.tagName === "INPUT")!;
    await user.type(version, "2.0.0");
    const state = screen.getAllByLabelText(/^State/).find((el) => el.tagName === "INPUT")!;
    await user.click(state);
    const listbox = document.getElementById(state.getAttribute("aria-controls") ?? "")!;
    await user.click(within(listbox).getByRole("option", { name: "Active", hidden: true }));
    fireEvent.change(editor(), { target: { value: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n" } });
    await user.click(screen.getByRole("button", { name: "Add Version" }));
    await screen.findByText("Template page");
    expect(lastCall(calls, "EnvTemplateAddVersion")).toMatchObject({
      input: { template: "t1", version: "2.0.0", state: "ACTIVE", inputs: [], outputs: [] },
    });
  });
});

describe("Add Version from a version with a sensitive default", () => {
  const password = {
    name: "password",
    type: "STRING",
    description: null,
    required: false,
    default: "********",
    options: [],
    pattern: null,
    min: null,
    max: null,
    sensitive: true,
  };
  const SENSITIVE = { ...TEMPLATE, versions: [{ ...TEMPLATE.versions[0], inputs: [...TEMPLATE.versions[0].inputs, password] }] };

  it("copies the default itself, which it asks the API to reveal, and never the mask", async () => {
    const user = userEvent.setup({ delay: null });
    const { calls } = renderStudio("/p/ml/studio/templates/t1/versions/new?from=v1", ROUTES, {
      EnvTemplateDetail: { data: { environmentTemplate: SENSITIVE } },
      EnvTemplateRevealedDefaults: {
        data: {
          environmentTemplate: {
            id: "t1",
            versions: [{ id: "v1", inputs: [{ name: "maxPods", default: "100" }, { name: "password", default: "s3cr3t" }] }],
          },
        },
      },
      EnvTemplateAddVersion: { data: { addEnvironmentTemplateVersion: { version: { id: "v2" }, userErrors: [] } } },
    });
    await screen.findByText(/Starting from a copy of version 1.0.0/);
    expect(lastCall(calls, "EnvTemplateRevealedDefaults")).toEqual({ id: "t1" });
    // the default is in the form, typed as a password
    const field = screen.getByLabelText("Input 2 default");
    expect(field).toHaveValue("s3cr3t");
    expect(field).toHaveAttribute("type", "password");

    const version = screen.getAllByLabelText(/^Version/).find((el) => el.tagName === "INPUT")!;
    await user.type(version, "2.0.0");
    await user.click(screen.getByRole("button", { name: "Add Version" }));
    const sent = lastCall(calls, "EnvTemplateAddVersion") as { input: { inputs: { name: string; default: string | null }[] } };
    expect(sent.input.inputs.map((i) => [i.name, i.default])).toEqual([
      ["maxPods", "100"],
      ["password", "s3cr3t"],
    ]);
  });

  it("does not ask for sensitive defaults when the version has none", async () => {
    const { calls } = renderStudio("/p/ml/studio/templates/t1/versions/new?from=v1", ROUTES, {
      EnvTemplateDetail: { data: { environmentTemplate: TEMPLATE } },
    });
    await screen.findByText(/Starting from a copy of version 1.0.0/);
    expect(calls.some((c) => c.name === "EnvTemplateRevealedDefaults")).toBe(false);
  });
});
