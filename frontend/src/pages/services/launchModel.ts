/* The state of the "Launch service" form, how it changes (one reducer), and how it becomes the
 * API's input. */
import { toPairs, type Pair } from "../../components/KeyValueEditor";
import { statusLabel } from "../../components/StatusBadge";
import type { CreateServiceInstanceInput, ServiceLaunchTemplatesQuery, ServicesComputeInstancesQuery } from "../../gql/graphql";
import { pairsInput, portsInput, toPortRows, type PortRow } from "../instance-templates/spec";
import { resourcesInput, storageInput, toResourcesRow, toStorageRow, type ResourcesRow, type StorageRow } from "../instance-templates/storage";

export type Template = ServiceLaunchTemplatesQuery["instanceTemplates"][number];
export type Instance = ServicesComputeInstancesQuery["computeInstances"]["edges"][number]["node"];

/** The fields the form shows errors next to (the others go in the summary). */
export const PLACED = ["project", "computeInstance", "template", "name", "displayName", "gpuCount", "gpuPartition", "imagePullSecret", "command", "env", "ports", "start", "storage", "resources"];

export interface Spec {
  command: string[];
  env: Pair[];
  ports: PortRow[];
  storage: StorageRow;
  resources: ResourcesRow;
}

export interface LaunchState extends Spec {
  computeInstance: string | null;
  templateId: string | null;
  name: string;
  /** The person typed a name: choosing a template no longer puts its name there. */
  nameTouched: boolean;
  displayName: string;
  gpuCount: number | "";
  /** The person set the GPU count: choosing a template no longer changes it. */
  gpuTouched: boolean;
  start: boolean;
  /** The GPU partition (a MIG profile's resource); "" for whole GPUs. Starts as the template's. */
  gpuPartition: string;
  /** The image pull secret's name; "" for none. Starts as the template's. */
  pullSecret: string;
  /** The advanced section (command, env, ports) is open. */
  advanced: boolean;
  errors: Record<string, string>;
}

export type LaunchAction =
  | { type: "chooseInstance"; id: string | null }
  | { type: "chooseTemplate"; template: Template }
  | { type: "setName"; name: string }
  | { type: "setDisplayName"; displayName: string }
  | { type: "setGpuCount"; gpuCount: number | "" }
  | { type: "setStart"; start: boolean }
  | { type: "setGpuPartition"; gpuPartition: string }
  | { type: "setPullSecret"; pullSecret: string }
  | { type: "toggleAdvanced" }
  | { type: "setSpec"; spec: Partial<Spec> }
  | { type: "setErrors"; errors: Record<string, string> };

/** The GPUs a compute instance has, and those its other service instances hold (all but STOPPED ones). */
export function gpuUse(instance: Instance): { total: number; used: number; free: number } {
  const total = instance.resources.gpuCount;
  const used = instance.services.filter((s) => s.status !== "STOPPED").reduce((sum, s) => sum + s.gpuCount, 0);
  return { total, used, free: Math.max(total - used, 0) };
}

/** The GPU count a template starts with: 1 for a GPU template, 0 for a CPU one. */
export function defaultGpuCount(template: Pick<Template, "vendor">): number {
  return template.vendor === "CPU" ? 0 : 1;
}

/** Why a compute instance cannot run services now (only deployed ones can), or null. */
export function whyNotSelectable(instance: Instance): string | null {
  switch (instance.status) {
    case "SUCCESS":
      return null;
    case "NOT_DEPLOYED":
      return "not deployed yet: deploy it first";
    case "WAITING":
    case "IN_PROGRESS":
      return "still deploying";
    case "FAILED":
      return "its deployment failed";
    case "DESTROYING":
      return "being destroyed";
    default:
      return statusLabel(instance.status).toLowerCase();
  }
}

export function templateSpec(template: Template | undefined): Spec {
  return {
    command: template ? [...template.command] : [],
    env: toPairs(template?.env),
    ports: toPortRows(template?.ports),
    storage: toStorageRow(template?.storage),
    resources: toResourcesRow(template?.resources),
  };
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Which parts of the spec differ from the template's (only those are sent). */
export function overrides(
  state: LaunchState,
  template: Template | undefined,
): { command: boolean; env: boolean; ports: boolean; storage: boolean; resources: boolean; any: boolean } {
  const original = templateSpec(template);
  const command = !same(state.command, original.command);
  const env = !same(state.env, original.env);
  const ports = !same(state.ports, original.ports);
  const storage = !same(storageInput(state.storage), storageInput(original.storage));
  const resources = !same(resourcesInput(state.resources), resourcesInput(original.resources));
  return { command, env, ports, storage, resources, any: command || env || ports || storage || resources };
}

function withTemplate(state: LaunchState, template: Template): LaunchState {
  return {
    ...state,
    templateId: template.id,
    gpuCount: state.gpuTouched ? state.gpuCount : defaultGpuCount(template),
    name: state.nameTouched ? state.name : template.name,
    gpuPartition: template.gpuPartition ?? "",
    pullSecret: template.imagePullSecret ?? "",
    ...templateSpec(template),
  };
}

/** Why the caller may not run services in a compute instance that is not theirs, or null: only its
 * owner and the project's admins may. The API says who manages it through its actions (UPDATE is
 * allowed in every status to exactly those). */
export function notYours(instance: Instance): string | null {
  const update = instance.actions.find((action) => action.name === "UPDATE");
  if (!update || update.allowed) return null;
  return instance.owner
    ? `${instance.owner.username}'s: only its owner or a project admin may run services in it`
    : "no owner: only a project admin may run services in it";
}

/** The form as it opens: the compute instance and template of the address (?computeInstance=,
 * ?template=), or the only compute instance that can run services. */
export function initialLaunch(
  wanted: { computeInstance: string | null; template: string | null },
  instances: readonly Instance[],
  templates: readonly Template[],
): LaunchState {
  const deployed = instances.filter((i) => i.status === "SUCCESS" && notYours(i) === null);
  const state: LaunchState = {
    computeInstance: wanted.computeInstance ?? (deployed.length === 1 ? deployed[0].id : null),
    templateId: null,
    name: "",
    nameTouched: false,
    displayName: "",
    gpuCount: 1,
    gpuTouched: false,
    command: [],
    env: [],
    ports: [],
    storage: toStorageRow(null),
    resources: toResourcesRow(null),
    start: true,
    gpuPartition: "",
    pullSecret: "",
    advanced: false,
    errors: {},
  };
  const template = templates.find((t) => t.id === wanted.template);
  return template ? withTemplate(state, template) : state;
}

export function launchReducer(state: LaunchState, action: LaunchAction): LaunchState {
  switch (action.type) {
    case "chooseInstance":
      return { ...state, computeInstance: action.id };
    case "chooseTemplate":
      return withTemplate(state, action.template);
    case "setName":
      return { ...state, name: action.name, nameTouched: true };
    case "setDisplayName":
      return { ...state, displayName: action.displayName };
    case "setGpuCount":
      return { ...state, gpuCount: action.gpuCount, gpuTouched: true };
    case "setStart":
      return { ...state, start: action.start };
    case "setGpuPartition":
      return { ...state, gpuPartition: action.gpuPartition };
    case "setPullSecret":
      return { ...state, pullSecret: action.pullSecret };
    case "toggleAdvanced":
      return { ...state, advanced: !state.advanced };
    case "setSpec":
      return { ...state, ...action.spec };
    case "setErrors":
      // Errors in the advanced section open it, so that they are seen.
      return {
        ...state,
        errors: action.errors,
        advanced: state.advanced || Object.keys(action.errors).some((key) => /^(command|env|ports|storage|resources)(\.|$)/.test(key)),
      };
  }
}

/** What must be chosen before asking the server (it checks everything else). */
export function missingFields(state: LaunchState): Record<string, string> {
  const missing: Record<string, string> = {};
  if (!state.computeInstance) missing.computeInstance = "Choose a compute instance";
  if (!state.templateId) missing.template = "Choose a template";
  if (!state.name.trim()) missing.name = "A name is required";
  return missing;
}

/** The input of createServiceInstance: the spec only where it differs from the template's. */
export function launchInput(state: LaunchState, project: string, template: Template | undefined): CreateServiceInstanceInput {
  const changed = overrides(state, template);
  return {
    project,
    computeInstance: state.computeInstance ?? "",
    template: state.templateId ?? "",
    name: state.name.trim(),
    displayName: state.displayName.trim() || null,
    gpuCount: state.gpuCount === "" ? null : state.gpuCount,
    command: changed.command ? state.command : null,
    env: changed.env ? pairsInput(state.env) : null,
    ports: changed.ports ? portsInput(state.ports) : null,
    storage: changed.storage ? storageInput(state.storage) : null,
    resources: changed.resources ? resourcesInput(state.resources) : null,
    // Sent only when they differ from the template's ("" asks for none).
    gpuPartition: state.gpuPartition !== (template?.gpuPartition ?? "") ? state.gpuPartition : null,
    imagePullSecret: state.pullSecret !== (template?.imagePullSecret ?? "") ? state.pullSecret : null,
    start: state.start,
  };
}

/** The GPU partitions the compute instance's cluster has for its GPU model (as the API matches
 * them on a simulated cluster: the model as part of the node's, case aside). */
export function partitionsFor(instance: Instance | undefined): { resourceName: string; profile: string; gpuModel?: string | null }[] {
  if (!instance?.cluster) return [];
  const model = instance.resources.gpuModel?.toLowerCase();
  const found = instance.cluster.gpuPartitions.filter((p) => !model || (p.gpuModel ?? "").toLowerCase().includes(model));
  return found.filter((p, index) => found.findIndex((q) => q.resourceName === p.resourceName) === index);
}

/** The warning when the template's GPU vendor is not the compute instance's, or null. */
export function vendorMismatch(state: LaunchState, template: Template | undefined, instance: Instance | undefined): string | null {
  if (!template || !instance || template.vendor === "CPU" || state.gpuCount === 0 || instance.resources.gpuVendor === template.vendor) {
    return null;
  }
  const has = instance.resources.gpuCount && instance.resources.gpuVendor !== "CPU" ? `${instance.resources.gpuVendor} GPUs` : "no GPUs";
  return `This template is for ${template.vendor} GPUs, but "${instance.displayName || instance.name}" has ${has}: choose another template, or set the GPU count to 0.`;
}
