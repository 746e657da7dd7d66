import type { Pair } from "../../components/KeyValueEditor";
import type {
  AllocationType,
  CreateComputeProfileInput,
  OverridePolicy,
  ProfileDetailQuery,
  ProfileWizardOptionsQuery,
  UpdateComputeProfileInput,
  Vendor,
} from "../../gql/graphql";

/** The state of the Add/Edit Compute Profile wizard, and how it becomes the API's input. */

export type Template = ProfileWizardOptionsQuery["environmentTemplates"][number];
export type TemplateVersion = Template["versions"][number];
export type InputDefinition = TemplateVersion["inputs"][number];
export type OutputDefinition = TemplateVersion["outputs"][number];
export type Profile = NonNullable<ProfileDetailQuery["computeProfile"]>;

export interface InputSettingState {
  /** "" means "the template's default". */
  value: string;
  required: boolean;
  override: OverridePolicy;
  allowedValues: string[];
}

export interface OutputSettingState {
  visible: boolean;
  displayName: string;
}

export interface WizardValues {
  name: string;
  displayName: string;
  description: string;
  allocationType: AllocationType | null;
  templateId: string | null;
  versionId: string | null;
  /** "" : the default cluster. */
  clusterId: string;
  cpu: string;
  memory: string;
  storage: string;
  gpuCount: number;
  gpuVendor: Vendor;
  gpuModel: string;
  /** Minutes of running; "": no limit. */
  autoStopMinutes: number | "";
  maxLifetimeMinutes: number | "";
  labels: Pair[];
  annotations: Pair[];
  iconUrl: string;
  readme: string;
  inputs: Record<string, InputSettingState>;
  outputs: Record<string, OutputSettingState>;
}

export type WizardMode = "create" | "edit";

export const STEPS = ["General", "End User Configuration", "Input Settings", "Output Settings"] as const;

/** The fields each step holds (error keys are these, or start with them and a dot). */
export const STEP_FIELDS: readonly (readonly string[])[] = [
  [
    "name",
    "displayName",
    "description",
    "allocationType",
    "environmentTemplate",
    "environmentTemplateVersion",
    "cluster",
    "resources",
    "timeLimits",
    "labels",
    "annotations",
  ],
  ["iconUrl", "readme"],
  ["inputSettings"],
  ["outputSettings"],
];

export const PLACED_FIELDS: readonly string[] = STEP_FIELDS.flat();

/** The step that shows the field with this error key, or null when no step shows it. */
export function stepOfField(key: string): number | null {
  const index = STEP_FIELDS.findIndex((fields) => fields.some((f) => key === f || key.startsWith(`${f}.`)));
  return index < 0 ? null : index;
}

/** The steps holding at least one of these errors. */
export function stepsWithErrors(errors: Record<string, string>): Set<number> {
  const steps = new Set<number>();
  for (const key of Object.keys(errors)) {
    const step = stepOfField(key);
    if (step !== null) steps.add(step);
  }
  return steps;
}

export function emptyValues(): WizardValues {
  return {
    name: "",
    displayName: "",
    description: "",
    allocationType: null,
    templateId: null,
    versionId: null,
    clusterId: "",
    cpu: "",
    memory: "",
    storage: "",
    gpuCount: 0,
    gpuVendor: "CPU",
    gpuModel: "",
    autoStopMinutes: "",
    maxLifetimeMinutes: "",
    labels: [],
    annotations: [],
    iconUrl: "",
    readme: "",
    inputs: {},
    outputs: {},
  };
}

export function defaultInputSetting(defn: InputDefinition): InputSettingState {
  return { value: "", required: defn.required, override: "ALLOWED", allowedValues: [] };
}

/** Settings for a version's inputs and outputs: those of the same name kept, the others fresh. */
export function settingsFor(
  version: TemplateVersion | null | undefined,
  inputs: Record<string, InputSettingState>,
  outputs: Record<string, OutputSettingState>,
): Pick<WizardValues, "inputs" | "outputs"> {
  const nextInputs: Record<string, InputSettingState> = {};
  const nextOutputs: Record<string, OutputSettingState> = {};
  for (const defn of version?.inputs ?? []) {
    const kept = inputs[defn.name];
    nextInputs[defn.name] = kept
      ? { ...kept, required: kept.required || defn.required }
      : defaultInputSetting(defn);
  }
  for (const out of version?.outputs ?? []) {
    nextOutputs[out.name] = outputs[out.name] ?? { visible: true, displayName: "" };
  }
  return { inputs: nextInputs, outputs: nextOutputs };
}

export function valuesFromProfile(profile: Profile): WizardValues {
  const inputs: Record<string, InputSettingState> = {};
  for (const s of profile.inputSettings) {
    inputs[s.name] = {
      value: s.value ?? "",
      required: s.required,
      override: s.override,
      allowedValues: [...s.allowedValues],
    };
  }
  const outputs: Record<string, OutputSettingState> = {};
  for (const s of profile.outputSettings) {
    outputs[s.name] = { visible: s.visible, displayName: s.displayName ?? "" };
  }
  return {
    name: profile.name,
    displayName: profile.displayName,
    description: profile.description ?? "",
    allocationType: profile.allocationType,
    templateId: profile.environmentTemplate.id,
    versionId: profile.environmentTemplateVersion.id,
    clusterId: profile.cluster?.id ?? "",
    cpu: profile.resources.cpu,
    memory: profile.resources.memory,
    storage: profile.resources.storage,
    gpuCount: profile.resources.gpuCount,
    gpuVendor: profile.resources.gpuVendor,
    gpuModel: profile.resources.gpuModel ?? "",
    autoStopMinutes: profile.timeLimits.autoStopMinutes ?? "",
    maxLifetimeMinutes: profile.timeLimits.maxLifetimeMinutes ?? "",
    labels: profile.labels.map(({ key, value }) => ({ key, value })),
    annotations: profile.annotations.map(({ key, value }) => ({ key, value })),
    iconUrl: profile.iconUrl ?? "",
    readme: profile.readme ?? "",
    inputs,
    outputs,
  };
}

const REQUIRED = "Required";

/** What must be filled in before the wizard leaves a step (the server checks everything else). */
const ICON_URL_EXPECTED = "must be an http:// or https:// URL, or an image as a base64 data: URL (data:image/png;base64,...)";

/** The icon URL's problem, by the server's rules (core/validation.py http_url), or null. */
export function iconUrlProblem(text: string): string | null {
  const url = text.trim();
  if (!url) return null;
  if (/\s/.test(url)) return "must not contain spaces";
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(url)?.[1].toLowerCase() ?? "";
  if (scheme === "data") {
    if (!/^data:image\/[a-zA-Z0-9.+-]+;base64,/i.test(url)) {
      return "a data: URL must be a base64 image, like data:image/png;base64,iVBORw0KGgo...";
    }
    return /^[A-Za-z0-9+/]+={0,2}$/.test(url.slice(url.indexOf(",") + 1)) ? null : "the data after base64, is not valid base64";
  }
  if (scheme !== "http" && scheme !== "https") {
    return scheme ? `${ICON_URL_EXPECTED} ("${scheme}:" URLs are not allowed)` : `${ICON_URL_EXPECTED}, starting with "https://"`;
  }
  if (!url.slice(scheme.length + 1).startsWith("//")) return `must have "//" and a host after "${scheme}:", like "https://example.com/icon.png"`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'must name a valid host, like "https://example.com/icon.png"';
  }
  if (parsed.username || parsed.password) return "must not contain a user name or password";
  if (!parsed.hostname) return 'must name a host, like "https://example.com/icon.png"';
  return null;
}

export function validateStep(values: WizardValues, step: number, mode: WizardMode): Record<string, string> {
  const errors: Record<string, string> = {};
  if (step === 1) {
    const icon = iconUrlProblem(values.iconUrl);
    if (icon) errors.iconUrl = icon;
    return errors;
  }
  if (step !== 0) return errors;
  if (mode === "create" && !values.name.trim()) errors.name = REQUIRED;
  if (!values.displayName.trim()) errors.displayName = REQUIRED;
  if (!values.allocationType) errors.allocationType = "Choose Dedicated or Shared";
  if (!values.templateId) errors.environmentTemplate = "Choose an environment template";
  else if (!values.versionId) errors.environmentTemplateVersion = "Choose an active version";
  if (!values.cpu.trim()) errors["resources.cpu"] = REQUIRED;
  if (!values.memory.trim()) errors["resources.memory"] = REQUIRED;
  if (!values.storage.trim()) errors["resources.storage"] = REQUIRED;
  return errors;
}

export function validateAll(values: WizardValues, mode: WizardMode): Record<string, string> {
  return STEPS.reduce<Record<string, string>>((all, _, step) => ({ ...all, ...validateStep(values, step, mode) }), {});
}

function inputSettings(values: WizardValues, version: TemplateVersion | null | undefined) {
  return (version?.inputs ?? []).map((defn) => {
    const s = values.inputs[defn.name] ?? defaultInputSetting(defn);
    return {
      name: defn.name,
      value: s.value === "" ? null : s.value,
      required: s.required || defn.required,
      override: s.override,
      allowedValues: s.override === "RESTRICTED" ? s.allowedValues : [],
    };
  });
}

function outputSettings(values: WizardValues, version: TemplateVersion | null | undefined) {
  return (version?.outputs ?? []).map((out) => {
    const s = values.outputs[out.name] ?? { visible: true, displayName: "" };
    return { name: out.name, displayName: s.displayName.trim() || null, visible: s.visible };
  });
}

function timeLimits(values: WizardValues) {
  return {
    autoStopMinutes: values.autoStopMinutes === "" ? null : values.autoStopMinutes,
    maxLifetimeMinutes: values.maxLifetimeMinutes === "" ? null : values.maxLifetimeMinutes,
  };
}

function resources(values: WizardValues) {
  return {
    cpu: values.cpu.trim(),
    memory: values.memory.trim(),
    storage: values.storage.trim(),
    gpuCount: values.gpuCount,
    gpuVendor: values.gpuVendor,
    gpuModel: values.gpuModel.trim() || null,
  };
}

export function createInput(
  values: WizardValues,
  project: string,
  version: TemplateVersion | null | undefined,
): CreateComputeProfileInput {
  return {
    project,
    name: values.name.trim(),
    displayName: values.displayName.trim(),
    description: values.description.trim() || null,
    allocationType: values.allocationType as AllocationType,
    environmentTemplateVersion: values.versionId ?? "",
    cluster: values.clusterId || null,
    resources: resources(values),
    timeLimits: timeLimits(values),
    labels: values.labels,
    annotations: values.annotations,
    iconUrl: values.iconUrl.trim() || null,
    readme: values.readme || null,
    inputSettings: inputSettings(values, version),
    outputSettings: outputSettings(values, version),
  };
}

/** Everything the wizard shows is sent: "" clears the description, icon and readme. */
export function updateInput(
  values: WizardValues,
  id: string,
  version: TemplateVersion | null | undefined,
): UpdateComputeProfileInput {
  return {
    id,
    displayName: values.displayName.trim(),
    description: values.description.trim(),
    allocationType: values.allocationType,
    environmentTemplateVersion: values.versionId,
    // null leaves the cluster as it is: the API cannot put a profile back on the default cluster.
    cluster: values.clusterId || null,
    resources: resources(values),
    timeLimits: timeLimits(values),
    labels: values.labels,
    annotations: values.annotations,
    iconUrl: values.iconUrl.trim(),
    readme: values.readme,
    inputSettings: inputSettings(values, version),
    outputSettings: outputSettings(values, version),
  };
}

/** The wizard as a whole: the values, the errors by field, the step shown and the furthest one
 * reached (steps up to it may be clicked). */
export interface WizardState {
  values: WizardValues;
  errors: Record<string, string>;
  active: number;
  visited: number;
}

export type WizardAction =
  /** Changes values and forgets the errors of the fields named (and of those under them). */
  | { type: "change"; patch: Partial<WizardValues>; fields: readonly string[] }
  | { type: "chooseTemplate"; template: Template | undefined }
  | { type: "chooseVersion"; version: TemplateVersion | undefined }
  | { type: "setGpuCount"; gpuCount: number }
  | { type: "setInput"; name: string; patch: Partial<InputSettingState>; field: string }
  | { type: "setOutput"; name: string; patch: Partial<OutputSettingState>; field: string }
  /** `merge`: added to the errors shown (a step's checks); otherwise they replace them. */
  | { type: "setErrors"; errors: Record<string, string>; merge?: boolean }
  | { type: "goTo"; step: number };

export function initialWizard(mode: WizardMode, profile: Profile | null): WizardState {
  return {
    values: profile ? valuesFromProfile(profile) : emptyValues(),
    errors: {},
    active: 0,
    visited: mode === "edit" ? STEPS.length - 1 : 0,
  };
}

/** The errors less those of `fields` and of the fields under them ("labels" forgets "labels.0.key"). */
export function forgetErrors(errors: Record<string, string>, fields: readonly string[]): Record<string, string> {
  return Object.fromEntries(Object.entries(errors).filter(([key]) => !fields.some((f) => key === f || key.startsWith(`${f}.`))));
}

export function wizardReducer(state: WizardState, action: WizardAction): WizardState {
  const { values, errors } = state;
  switch (action.type) {
    case "change":
      return { ...state, values: { ...values, ...action.patch }, errors: forgetErrors(errors, action.fields) };
    case "chooseTemplate": {
      // A template's first active version, with the settings of its inputs and outputs.
      const version = action.template?.versions.find((v) => v.state === "ACTIVE");
      return {
        ...state,
        values: { ...values, templateId: action.template?.id ?? null, versionId: version?.id ?? null, ...settingsFor(version, values.inputs, values.outputs) },
        errors: forgetErrors(errors, ["environmentTemplate", "environmentTemplateVersion"]),
      };
    }
    case "chooseVersion":
      return {
        ...state,
        values: { ...values, versionId: action.version?.id ?? null, ...settingsFor(action.version, values.inputs, values.outputs) },
        errors: forgetErrors(errors, ["environmentTemplateVersion"]),
      };
    case "setGpuCount": {
      // No GPU means the CPU "vendor"; GPUs again bring NVIDIA back as the vendor.
      const { gpuCount } = action;
      const gpuVendor: Vendor = gpuCount === 0 ? "CPU" : values.gpuVendor === "CPU" ? "NVIDIA" : values.gpuVendor;
      return { ...state, values: { ...values, gpuCount, gpuVendor }, errors: forgetErrors(errors, ["resources.gpuCount", "resources.gpuVendor"]) };
    }
    case "setInput":
      return {
        ...state,
        values: { ...values, inputs: { ...values.inputs, [action.name]: { ...values.inputs[action.name], ...action.patch } } },
        errors: forgetErrors(errors, [action.field]),
      };
    case "setOutput":
      return {
        ...state,
        values: { ...values, outputs: { ...values.outputs, [action.name]: { ...values.outputs[action.name], ...action.patch } } },
        errors: forgetErrors(errors, [action.field]),
      };
    case "setErrors":
      return { ...state, errors: action.merge ? { ...errors, ...action.errors } : action.errors };
    case "goTo":
      return { ...state, active: action.step, visited: Math.max(state.visited, action.step) };
  }
}
