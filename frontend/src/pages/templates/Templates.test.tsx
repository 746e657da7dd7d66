import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { lastCall, renderStudio } from "../profiles/testUtils";
import { TemplatePage } from "./TemplatePage";
import { TemplatesListPage } from "./TemplatesListPage";

const OWN = {
  id: "t1",
  name: "team-ns",
  displayName: "Team namespace",
  description: "A namespace per instance.",
  builtIn: false,
  updatedAt: "2026-01-01T00:00:00",
  project: { id: "p1", name: "ml" },
  versions: [
    { id: "v2", version: "2.0.0", state: "DRAFT" },
    { id: "v1", version: "1.0.0", state: "ACTIVE" },
  ],
};
const BUILT_IN = {
  id: "t0",
  name: "gpu-namespace",
  displayName: "GPU namespace (shared)",
  description: null,
  builtIn: true,
  updatedAt: "2026-01-01T00:00:00",
  project: { id: "p0", name: "gpupaas-system" },
  versions: [{ id: "b1", version: "1.0.0", state: "ACTIVE" }],
};

const DETAIL = {
  ...OWN,
  createdAt: "2026-01-01T00:00:00",
  project: { id: "p1", name: "ml", displayName: "Machine Learning" },
  versions: [
    {
      id: "v2",
      version: "2.0.0",
      state: "DRAFT",
      createdAt: "2026-01-02T00:00:00",
      resources: "apiVersion: v1\nkind: Namespace\n",
      inputs: [],
      outputs: [],
    },
    {
      id: "v1",
      version: "1.0.0",
      state: "ACTIVE",
      createdAt: "2026-01-01T00:00:00",
      resources: "apiVersion: v1\nkind: Namespace\n",
      inputs: [],
      outputs: [{ name: "namespace", description: null, value: "{{ instance.namespace }}" }],
    },
  ],
};

const LIST_ROUTES = [{ path: "studio/templates", element: <TemplatesListPage /> }];
const PAGE_ROUTES = [
  { path: "studio/templates/:id", element: <TemplatePage /> },
  { path: "studio/templates", element: <p>Templates list</p> },
];

describe("Environment Templates list", () => {
  it("lists templates with their versions' states, built-in ones marked and not deletable", async () => {
    const user = userEvent.setup({ delay: null });
    renderStudio("/p/ml/studio/templates", LIST_ROUTES, { EnvTemplatesList: { data: { environmentTemplates: [BUILT_IN, OWN] } } });
    const builtIn = (await screen.findByRole("link", { name: "GPU namespace (shared)" })).closest("tr")!;
    expect(within(builtIn).getByText("Built-in")).toBeInTheDocument();
    const own = screen.getByRole("link", { name: "Team namespace" }).closest("tr")!;
    expect(within(own).getByText("2.0.0 · Draft")).toBeInTheDocument();
    expect(within(own).getByText("1.0.0 · Active")).toBeInTheDocument();

    await user.click(screen.getByRole("button", { name: "Actions for gpu-namespace" }));
    expect(screen.queryByRole("menuitem", { name: "Delete", hidden: true })).not.toBeInTheDocument();
  });

  it("adds a template and shows the server's errors at their fields", async () => {
    const user = userEvent.setup({ delay: null });
    const { calls } = renderStudio("/p/ml/studio/templates", LIST_ROUTES, {
      EnvTemplatesList: { data: { environmentTemplates: [] } },
      EnvTemplateCreate: {
        data: {
          createEnvironmentTemplate: {
            environmentTemplate: null,
            userErrors: [{ field: ["input", "name"], message: 'a template named "Team" already exists', code: "TAKEN" }],
          },
        },
      },
    });
    await user.click((await screen.findAllByRole("button", { name: "Add Environment Template" }))[0]);
    const dialog = await screen.findByRole("dialog", { name: "Add Environment Template" });
    await user.type(within(dialog).getByLabelText(/^Unique Name/), "Team");
    await user.click(within(dialog).getByRole("button", { name: "Add Environment Template" }));
    expect(lastCall(calls, "EnvTemplateCreate")).toEqual({
      input: { project: "ml", name: "Team", displayName: null, description: null },
    });
    expect(await within(dialog).findByText('a template named "Team" already exists')).toBeInTheDocument();
    expect(within(dialog).getByLabelText(/^Unique Name/)).toHaveAttribute("aria-invalid", "true");
  });
});

describe("Environment Template page", () => {
  it("sets a version's state", async () => {
    const user = userEvent.setup({ delay: null });
    const { calls } = renderStudio("/p/ml/studio/templates/t1", PAGE_ROUTES, {
      EnvTemplateDetail: { data: { environmentTemplate: DETAIL } },
      EnvTemplateSetVersionState: { data: { setEnvironmentTemplateVersionState: { version: { id: "v2", state: "ACTIVE" }, userErrors: [] } } },
    });
    const select = (await screen.findAllByLabelText("State of version 2.0.0")).find((el) => el.tagName === "INPUT")!;
    expect(select).toHaveValue("Draft");
    await user.click(select);
    const listbox = document.getElementById(select.getAttribute("aria-controls") ?? "")!;
    await user.click(within(listbox).getByRole("option", { name: "Active", hidden: true }));
    expect(lastCall(calls, "EnvTemplateSetVersionState")).toEqual({ id: "v2", state: "ACTIVE" });
    // The template is asked for again.
    await waitFor(() => expect(calls.filter((c) => c.name === "EnvTemplateDetail").length).toBeGreaterThan(1));
  });

  it("asks before deleting the template and shows why the server refuses", async () => {
    const user = userEvent.setup({ delay: null });
    const { calls } = renderStudio("/p/ml/studio/templates/t1", PAGE_ROUTES, {
      EnvTemplateDetail: { data: { environmentTemplate: DETAIL } },
      EnvTemplateDelete: {
        data: {
          deleteEnvironmentTemplate: {
            deletedId: null,
            userErrors: [
              {
                field: ["id"],
                message: "this template is in use by compute profiles (sm-gpu): move them to another template first",
                code: "INVALID_STATE",
              },
            ],
          },
        },
      },
    });
    await user.click(await screen.findByRole("button", { name: "Delete" }));
    const dialog = await screen.findByRole("dialog", { name: "Delete environment template" });
    expect(dialog).toHaveTextContent("This cannot be undone.");
    await user.click(within(dialog).getByRole("button", { name: "Delete" }));
    expect(lastCall(calls, "EnvTemplateDelete")).toEqual({ id: "t1" });
    expect(await within(dialog).findByText(/in use by compute profiles \(sm-gpu\)/)).toBeInTheDocument();
  });
});
