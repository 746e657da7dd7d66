import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";

// Whole wizards are filled in, keystroke by keystroke.
vi.setConfig({ testTimeout: 30_000 });

import { ProfileWizardPage } from "./ProfileWizardPage";
import { lastCall, renderStudio } from "./testUtils";

const OPTIONS = {
  data: {
    environmentTemplates: [
      {
        id: "t1",
        name: "gpu-namespace",
        displayName: "GPU namespace",
        builtIn: true,
        versions: [
          { id: "v2", version: "2.0.0", state: "DRAFT", createdAt: "2026-01-02T00:00:00", inputs: [], outputs: [] },
          {
            id: "v1",
            version: "1.0.0",
            state: "ACTIVE",
            createdAt: "2026-01-01T00:00:00",
            inputs: [
              {
                name: "maxPods",
                type: "NUMBER",
                description: "How many pods the namespace may hold.",
                required: false,
                default: "100",
                options: [],
                pattern: null,
                min: 1,
                max: 10000,
                sensitive: false,
              },
              {
                name: "driver",
                type: "STRING",
                description: "The GPU driver.",
                required: true,
                default: null,
                options: ["535", "550"],
                pattern: null,
                min: null,
                max: null,
                sensitive: false,
              },
            ],
            outputs: [
              { name: "namespace", description: "The namespace of the instance." },
              { name: "quota", description: null },
            ],
          },
        ],
      },
    ],
    clusters: [{ id: "c1", name: "local", displayName: "Local", gpuModels: ["H100 80GB"] }],
  },
};

const PROFILE = {
  id: "cp1",
  name: "sm-gpu",
  displayName: "Small GPU",
  description: "A small one.",
  allocationType: "SHARED",
  createdAt: "2026-01-01T00:00:00",
  updatedAt: "2026-01-01T00:00:00",
  iconUrl: null,
  readme: "# Hello",
  readmeHtml: "<h1>Hello</h1>",
  project: { id: "p1", name: "ml" },
  resources: { cpu: "4", memory: "16Gi", storage: "50Gi", gpuCount: 1, gpuVendor: "NVIDIA", gpuModel: "A100" },
  timeLimits: { autoStopMinutes: 240, maxLifetimeMinutes: null },
  labels: [{ key: "team", value: "ml" }],
  annotations: [],
  inputSettings: [
    { name: "maxPods", value: "100", required: false, override: "ALLOWED", allowedValues: [] },
    { name: "driver", value: "535", required: true, override: "RESTRICTED", allowedValues: ["535", "550"] },
  ],
  outputSettings: [
    { name: "namespace", displayName: null, visible: true },
    { name: "quota", displayName: null, visible: true },
  ],
  cluster: null,
  environmentTemplate: { id: "t1", name: "gpu-namespace", displayName: "GPU namespace", builtIn: true },
  environmentTemplateVersion: { id: "v1", version: "1.0.0", state: "ACTIVE", inputs: [], outputs: [] },
  sharing: { mode: "NONE", projects: [] },
};

const ROUTES = [
  { path: "studio/profiles/new", element: <ProfileWizardPage /> },
  { path: "studio/profiles/:id/edit", element: <ProfileWizardPage /> },
  { path: "studio/profiles/:id", element: <p>Profile page</p> },
];

/** The form control labelled so (a Select's open listbox has the same label). */
function field(label: RegExp | string): HTMLElement {
  const found = screen.getAllByLabelText(label).filter((el) => ["INPUT", "TEXTAREA"].includes(el.tagName));
  if (found.length !== 1) throw new Error(`${found.length} fields labelled ${String(label)}`);
  return found[0];
}

async function choose(user: ReturnType<typeof userEvent.setup>, label: RegExp | string, option: string | RegExp) {
  const input = field(label);
  await user.click(input);
  // Every Select keeps its (closed) listbox in the page: look in the one this input controls. In
  // jsdom it is still in its opening transition (display: none), hence `hidden`.
  const listbox = document.getElementById(input.getAttribute("aria-controls") ?? "");
  if (!listbox) throw new Error(`no listbox for ${String(label)}`);
  await user.click(within(listbox).getByRole("option", { name: option, hidden: true }));
}

async function fillGeneral(user: ReturnType<typeof userEvent.setup>) {
  await user.type(field(/^Unique Name/), "sm-gpu");
  await user.type(field(/^Display Name/), "Small GPU");
  await choose(user, /^Allocation Type/, "Dedicated");
  await choose(user, /^Environment Template$|^Environment Template \*/, /GPU namespace/);
  await user.type(field(/^CPU/), "8");
  await user.type(field(/^Memory/), "64Gi");
  await user.type(field(/^Storage/), "100Gi");
}

function stepButton(name: RegExp) {
  return screen.getByRole("button", { name });
}

describe("Add Compute Profile wizard", () => {
  it("asks for the required fields before leaving General", async () => {
    const user = userEvent.setup({ delay: null });
    const { calls } = renderStudio("/p/ml/studio/profiles/new", ROUTES, { ProfileWizardOptions: OPTIONS });
    await screen.findAllByLabelText(/^Unique Name/).then(() => field(/^Unique Name/));
    await user.click(screen.getByRole("button", { name: "Next" }));
    expect(field(/^Unique Name/)).toHaveAttribute("aria-invalid", "true");
    expect(field(/^Display Name/)).toHaveAttribute("aria-invalid", "true");
    expect(screen.getByText("Choose Dedicated or Shared")).toBeInTheDocument();
    expect(screen.getByText("Choose an environment template")).toBeInTheDocument();
    expect(field(/^CPU/)).toHaveAttribute("aria-invalid", "true");
    // Still on General: the icon URL of the next step is not shown.
    expect(screen.queryByLabelText(/^Icon URL/)).not.toBeInTheDocument();
    expect(calls.some((c) => c.name === "ProfileCreate")).toBe(false);
  });

  it("checks the icon URL on its own step, and says a data: URL must be base64", async () => {
    const user = userEvent.setup({ delay: null });
    const { calls } = renderStudio("/p/ml/studio/profiles/new", ROUTES, { ProfileWizardOptions: OPTIONS });
    await screen.findAllByLabelText(/^Unique Name/).then(() => field(/^Unique Name/));
    await fillGeneral(user);
    await user.click(screen.getByRole("button", { name: "Next" }));
    expect(screen.getByText(/base64 data: URL \(data:image\/png;base64,\.\.\.\)/)).toBeInTheDocument();

    // A data: URL that is not base64 is refused when leaving the field, and Next stays on the step.
    await user.type(field(/^Icon URL/), "data:image/svg+xml,<svg/>");
    await user.tab();
    expect(field(/^Icon URL/)).toHaveAttribute("aria-invalid", "true");
    expect(screen.getByText(/a data: URL must be a base64 image/)).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Next" }));
    expect(field(/^Icon URL/)).toBeInTheDocument();
    expect(screen.queryByLabelText("Override policy of driver")).not.toBeInTheDocument();

    // So is an ftp: URL; a base64 one passes and Next moves on.
    await user.clear(field(/^Icon URL/));
    await user.type(field(/^Icon URL/), "ftp://example.com/icon.png");
    await user.click(screen.getByRole("button", { name: "Next" }));
    expect(screen.getByText(/"ftp:" URLs are not allowed/)).toBeInTheDocument();
    await user.clear(field(/^Icon URL/));
    await user.type(field(/^Icon URL/), "data:image/png;base64,iVBORw0KGgo=");
    expect(field(/^Icon URL/)).not.toHaveAttribute("aria-invalid", "true");
    await user.click(screen.getByRole("button", { name: "Next" }));
    expect(await screen.findByLabelText("Override policy of driver")).toBeInTheDocument();
    expect(calls.some((c) => c.name === "ProfileCreate")).toBe(false);
  });

  it("warns, without blocking, of a GPU model no cluster has and offers the clusters' models", async () => {
    const user = userEvent.setup({ delay: null });
    renderStudio("/p/ml/studio/profiles/new", ROUTES, { ProfileWizardOptions: OPTIONS });
    await screen.findAllByLabelText(/^Unique Name/).then(() => field(/^Unique Name/));
    await fillGeneral(user);
    expect(screen.getByText("Optional; the clusters have: H100 80GB.")).toBeInTheDocument();
    await user.clear(field(/^GPU Count/));
    await user.type(field(/^GPU Count/), "1");
    await user.type(field(/^GPU Model/), "A100-80GB");
    expect(screen.getByRole("status")).toHaveTextContent('No registered cluster has GPU model "A100-80GB"');
    expect(field(/^GPU Model/)).not.toHaveAttribute("aria-invalid", "true");
    // Not blocking: Next leaves General.
    await user.click(screen.getByRole("button", { name: "Next" }));
    expect(await screen.findByLabelText(/^Icon URL/)).toBeInTheDocument();
    await user.click(stepButton(/General/));
    await user.clear(field(/^GPU Model/));
    await user.type(field(/^GPU Model/), "H100 80GB");
    expect(screen.queryByText(/No registered cluster has GPU model/)).not.toBeInTheDocument();
  });

  it("offers only ACTIVE versions and sends every step's settings", async () => {
    const user = userEvent.setup({ delay: null });
    const { calls } = renderStudio("/p/ml/studio/profiles/new", ROUTES, {
      ProfileWizardOptions: OPTIONS,
      ProfileCreate: { data: { createComputeProfile: { computeProfile: { id: "cp9", name: "sm-gpu" }, userErrors: [] } } },
    });
    await screen.findAllByLabelText(/^Unique Name/).then(() => field(/^Unique Name/));
    await fillGeneral(user);
    // The first ACTIVE version is chosen; the DRAFT one cannot be.
    expect(field(/^Environment Template Version/)).toHaveValue("1.0.0 (Active)");
    const versionInput = field(/^Environment Template Version/);
    await user.click(versionInput);
    const versions = document.getElementById(versionInput.getAttribute("aria-controls") ?? "")!;
    expect(within(versions).getByRole("option", { name: "2.0.0 (Draft)", hidden: true })).toHaveAttribute("data-combobox-disabled", "true");
    await user.keyboard("{Escape}");
    await user.clear(field(/^GPU Count/));
    await user.type(field(/^GPU Count/), "2");
    expect(field(/^GPU Vendor/)).toHaveValue("NVIDIA");
    await user.click(screen.getByRole("button", { name: "Add label" }));
    await user.type(field("Labels 1 key"), "team");
    await user.type(field("Labels 1 value"), "ml");
    await user.click(screen.getByRole("button", { name: "Next" }));

    // End User Configuration: the icon previews (fallback while empty).
    expect(await screen.findByTestId("profile-icon-fallback")).toBeInTheDocument();
    await user.type(field(/^Icon URL/), "https://example.com/icon.png");
    expect(screen.getByRole("img", { name: "Small GPU icon" })).toHaveAttribute("src", "https://example.com/icon.png");
    await user.click(screen.getByRole("button", { name: "Next" }));

    // Input Settings
    await choose(user, "Value of driver", "550");
    await choose(user, "Override policy of driver", /^Not allowed/);
    expect(field("driver is required")).toBeChecked();
    expect(field("driver is required")).toBeDisabled();
    await user.click(screen.getByRole("button", { name: "Next" }));

    // Output Settings
    await user.type(field("Display name of namespace"), "Namespace");
    await user.click(field("Show quota to users"));
    await user.click(screen.getByRole("button", { name: "Add Compute Profile" }));

    await screen.findByText("Profile page");
    expect(lastCall(calls, "ProfileCreate")).toEqual({
      input: {
        project: "ml",
        name: "sm-gpu",
        displayName: "Small GPU",
        description: null,
        allocationType: "DEDICATED",
        environmentTemplateVersion: "v1",
        cluster: null,
        resources: { cpu: "8", memory: "64Gi", storage: "100Gi", gpuCount: 2, gpuVendor: "NVIDIA", gpuModel: null },
        timeLimits: { autoStopMinutes: null, maxLifetimeMinutes: null },
        labels: [{ key: "team", value: "ml" }],
        annotations: [],
        iconUrl: "https://example.com/icon.png",
        readme: null,
        inputSettings: [
          { name: "maxPods", value: null, required: false, override: "ALLOWED", allowedValues: [] },
          { name: "driver", value: "550", required: true, override: "NOT_ALLOWED", allowedValues: [] },
        ],
        outputSettings: [
          { name: "namespace", displayName: "Namespace", visible: true },
          { name: "quota", displayName: null, visible: false },
        ],
      },
    });
  });

  it("puts the server's errors next to their fields and opens the step of the first one", async () => {
    const user = userEvent.setup({ delay: null });
    renderStudio("/p/ml/studio/profiles/new", ROUTES, {
      ProfileWizardOptions: OPTIONS,
      ProfileCreate: {
        data: {
          createComputeProfile: {
            computeProfile: null,
            userErrors: [
              { field: ["input", "inputSettings", "1", "allowedValues"], message: "RESTRICTED needs at least one allowed value", code: "INVALID" },
              { field: ["input", "resources", "cpu"], message: "must be a number of CPU cores", code: "INVALID" },
              { field: ["input", "iconUrl"], message: "must be an http(s) URL", code: "INVALID" },
              { field: ["input", "project"], message: "the built-in project holds templates only", code: "INVALID" },
            ],
          },
        },
      },
    });
    await screen.findAllByLabelText(/^Unique Name/).then(() => field(/^Unique Name/));
    await fillGeneral(user);
    await user.click(screen.getByRole("button", { name: "Next" }));
    await user.click(screen.getByRole("button", { name: "Next" }));
    await choose(user, "Override policy of driver", /^Restricted/);
    await user.click(screen.getByRole("button", { name: "Next" }));
    await user.click(screen.getByRole("button", { name: "Add Compute Profile" }));

    // The first error is an input setting's: the wizard shows Input Settings, the error at its field.
    const allowed = await screen.findAllByLabelText("Allowed values of driver").then(() => field("Allowed values of driver"));
    expect(allowed).toHaveAttribute("aria-invalid", "true");
    expect(screen.getByText("RESTRICTED needs at least one allowed value")).toBeInTheDocument();
    // Errors no field shows are listed above the buttons.
    expect(screen.getByText("project: the built-in project holds templates only")).toBeInTheDocument();
    // The steps with errors are marked.
    expect(screen.getAllByText("Has errors")).toHaveLength(3);

    // General holds the CPU error, next to the CPU field.
    await user.click(stepButton(/General/));
    expect(field(/^CPU/)).toHaveAttribute("aria-invalid", "true");
    expect(screen.getByText("must be a number of CPU cores")).toBeInTheDocument();
    // End User Configuration holds the icon URL's.
    await user.click(stepButton(/End User Configuration/));
    expect(field(/^Icon URL/)).toHaveAttribute("aria-invalid", "true");
    expect(screen.getByText("must be an http(s) URL")).toBeInTheDocument();
  });

  it("opens General when the unique name is taken", async () => {
    const user = userEvent.setup({ delay: null });
    renderStudio("/p/ml/studio/profiles/new", ROUTES, {
      ProfileWizardOptions: OPTIONS,
      ProfileCreate: {
        data: {
          createComputeProfile: {
            computeProfile: null,
            userErrors: [{ field: ["input", "name"], message: 'a compute profile named "sm-gpu" already exists in this project', code: "TAKEN" }],
          },
        },
      },
    });
    await screen.findAllByLabelText(/^Unique Name/).then(() => field(/^Unique Name/));
    await fillGeneral(user);
    for (let i = 0; i < 3; i += 1) await user.click(screen.getByRole("button", { name: "Next" }));
    await user.click(screen.getByRole("button", { name: "Add Compute Profile" }));
    const name = await screen.findAllByLabelText(/^Unique Name/).then(() => field(/^Unique Name/));
    expect(name).toHaveAttribute("aria-invalid", "true");
    expect(screen.getByText('a compute profile named "sm-gpu" already exists in this project')).toBeInTheDocument();
  });
});

describe("Edit Compute Profile", () => {
  it("shows the saved profile, keeps the unique name read-only and sends the changes", async () => {
    const user = userEvent.setup({ delay: null });
    const { calls } = renderStudio("/p/ml/studio/profiles/cp1/edit", ROUTES, {
      ProfileWizardOptions: OPTIONS,
      ProfileDetail: { data: { computeProfile: PROFILE } },
      ProfileUpdate: { data: { updateComputeProfile: { computeProfile: { id: "cp1", name: "sm-gpu", readmeHtml: "<h1>Hello</h1>" }, userErrors: [] } } },
      // The server renders the preview (the browser never renders markdown).
      ProfileReadmePreview: (variables) => ({
        data: { renderReadme: `<h1>Hello</h1><p>${String(variables.markdown).length} characters</p>` },
      }),
    });
    const name = await screen.findAllByLabelText(/^Unique Name/).then(() => field(/^Unique Name/));
    expect(name).toHaveValue("sm-gpu");
    expect(name).toHaveAttribute("readonly");
    await user.clear(field(/^Display Name/));
    await user.type(field(/^Display Name/), "Small");

    // The readme as the server renders it, live.
    await user.click(stepButton(/End User Configuration/));
    const preview = await screen.findByRole("region", { name: "Readme preview" });
    expect(within(preview).getByRole("heading", { name: "Hello" })).toBeInTheDocument();
    const asked = calls.filter((c) => c.name === "ProfileReadmePreview").map((c) => c.variables.markdown);
    expect(asked).toContain(PROFILE.readme);

    await user.click(screen.getByRole("button", { name: "Save Changes" }));
    await screen.findByText("Profile page");
    const input = (lastCall(calls, "ProfileUpdate") as { input: Record<string, unknown> }).input;
    expect(input).toMatchObject({
      id: "cp1",
      displayName: "Small",
      description: "A small one.",
      allocationType: "SHARED",
      environmentTemplateVersion: "v1",
      resources: { cpu: "4", memory: "16Gi", storage: "50Gi", gpuCount: 1, gpuVendor: "NVIDIA", gpuModel: "A100" },
      timeLimits: { autoStopMinutes: 240, maxLifetimeMinutes: null },
      labels: [{ key: "team", value: "ml" }],
      readme: "# Hello",
      inputSettings: [
        { name: "maxPods", value: "100", required: false, override: "ALLOWED", allowedValues: [] },
        { name: "driver", value: "535", required: true, override: "RESTRICTED", allowedValues: ["535", "550"] },
      ],
    });
    expect(input).not.toHaveProperty("name");
  });

  it("says when the profile does not exist", async () => {
    renderStudio("/p/ml/studio/profiles/nope/edit", ROUTES, {
      ProfileWizardOptions: OPTIONS,
      ProfileDetail: { data: { computeProfile: null } },
    });
    await waitFor(() => expect(screen.getByRole("alert")).toHaveTextContent(/does not exist/));
  });
});
