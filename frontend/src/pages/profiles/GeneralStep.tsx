/* The General step of the compute profile wizard: names, allocation, cluster, the environment
 * template and its version, resources, labels and annotations. */
import { Autocomplete, Fieldset, NumberInput, Select, SimpleGrid, Stack, Text, TextInput, Textarea } from "@mantine/core";
import type { Dispatch } from "react";

import { formatMinutes } from "../../components/AutoStop";
import { KeyValueEditor } from "../../components/KeyValueEditor";
import { statusLabel } from "../../components/StatusBadge";
import type { ProfileWizardOptionsQuery, Vendor } from "../../gql/graphql";
import type { Profile, Template, WizardAction, WizardMode, WizardState, WizardValues } from "./wizardModel";

type Cluster = ProfileWizardOptionsQuery["clusters"][number];

/** A non-blocking warning (the profile can still be saved): the GPU model is on no cluster, as
 * their last check saw their nodes, so its instances could not be scheduled. */
export function gpuModelWarning(values: Pick<WizardValues, "gpuCount" | "gpuModel">, knownModels: readonly string[]): string | null {
  const model = values.gpuModel.trim();
  // A part of a model counts, as the simulated cluster schedules ("H100" of "H100 80GB"); the
  // server, which knows each cluster's driver, warns of the rest when the profile is saved.
  if (values.gpuCount === 0 || !model || knownModels.some((known) => known.toLowerCase().includes(model.toLowerCase()))) return null;
  return `No registered cluster has GPU model "${model}": the profile can be saved, but its instances cannot be scheduled until a cluster has it.`;
}

const DEFAULT_CLUSTER = "__default__";
const VENDORS: { value: Vendor; label: string }[] = [
  { value: "NVIDIA", label: "NVIDIA" },
  { value: "AMD", label: "AMD" },
  { value: "INTEL", label: "Intel" },
  { value: "ASCEND", label: "Ascend" },
  { value: "CPU", label: "None (CPU only)" },
];

function versionLabel(version: { version: string; state: string }): string {
  return `${version.version} (${statusLabel(version.state)})`;
}

export function GeneralStep({
  mode,
  state,
  dispatch,
  profile,
  templates,
  clusters,
}: {
  mode: WizardMode;
  state: WizardState;
  dispatch: Dispatch<WizardAction>;
  profile: Profile | null;
  templates: readonly Template[];
  clusters: readonly Cluster[];
}) {
  const { values, errors } = state;
  const template = templates.find((t) => t.id === values.templateId);
  const change = (patch: Partial<WizardValues>, ...fields: string[]) => dispatch({ type: "change", patch, fields });
  const chooseTemplate = (id: string | null) => dispatch({ type: "chooseTemplate", template: templates.find((t) => t.id === id) });
  const chooseVersion = (id: string | null) => dispatch({ type: "chooseVersion", version: template?.versions.find((v) => v.id === id) });
  const setGpuCount = (value: number | string) =>
    dispatch({ type: "setGpuCount", gpuCount: typeof value === "number" ? value : Number.parseInt(value, 10) || 0 });

  const ownTemplates = templates.filter((t) => !t.builtIn);
  const builtIns = templates.filter((t) => t.builtIn);
  const templateData = [
    { group: "This project", items: ownTemplates.map((t) => ({ value: t.id, label: `${t.displayName} (${t.name})` })) },
    { group: "Built-in", items: builtIns.map((t) => ({ value: t.id, label: `${t.displayName} (${t.name})` })) },
  ].filter((g) => g.items.length > 0);
  const pinned = profile?.environmentTemplateVersion.id;
  const versionData = (template?.versions ?? []).map((v) => ({
    value: v.id,
    label: versionLabel(v),
    // Only ACTIVE versions can be pinned; the one a profile already pins stays selectable.
    disabled: v.state !== "ACTIVE" && v.id !== pinned,
  }));
  const noActive = template !== undefined && !template.versions.some((v) => v.state === "ACTIVE");
  const clusterData = [
    {
      value: DEFAULT_CLUSTER,
      label: "Default cluster",
      disabled: mode === "edit" && Boolean(profile?.cluster),
    },
    ...clusters.map((c) => ({
      value: c.id,
      label: `${c.displayName || c.name}${c.gpuModels.length > 0 ? ` · ${c.gpuModels.join(", ")}` : ""}`,
    })),
  ];

  const knownModels = [...new Set(clusters.flatMap((c) => c.gpuModels))].sort();
  const modelWarning = gpuModelWarning(values, knownModels);

  return (
    <Stack>
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <TextInput
          label="Unique Name"
          description={
            mode === "create"
              ? "e.g. sm-gpu-inst: lowercase letters, digits and '-'. It cannot be changed once the profile is created."
              : "The unique name cannot be changed."
          }
          required={mode === "create"}
          readOnly={mode === "edit"}
          variant={mode === "edit" ? "filled" : "default"}
          value={values.name}
          error={errors.name}
          onChange={(event) => change({ name: event.currentTarget.value }, "name")}
          data-autofocus
        />
        <TextInput
          label="Display Name"
          description="What end users see, e.g. Small, Medium, Large."
          required
          value={values.displayName}
          error={errors.displayName}
          onChange={(event) => change({ displayName: event.currentTarget.value }, "displayName")}
        />
      </SimpleGrid>
      <Textarea
        label="Description"
        description="A few sentences that help end users understand the profile."
        autosize
        minRows={2}
        maxRows={8}
        value={values.description}
        error={errors.description}
        onChange={(event) => change({ description: event.currentTarget.value }, "description")}
      />
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <Select
          label="Allocation Type"
          description="Dedicated: whole resources for each instance (training). Shared: a share of the cluster (inference, experiments)."
          required
          placeholder="Choose"
          data={[
            { value: "DEDICATED", label: "Dedicated" },
            { value: "SHARED", label: "Shared" },
          ]}
          value={values.allocationType}
          allowDeselect={false}
          error={errors.allocationType}
          onChange={(value) => change({ allocationType: value as WizardValues["allocationType"] }, "allocationType")}
        />
        <Select
          label="Cluster"
          description={
            mode === "edit" && profile?.cluster
              ? "Where instances go. (The API cannot move a profile back to the default cluster.)"
              : "Where instances of this profile are deployed."
          }
          data={clusterData}
          value={values.clusterId || DEFAULT_CLUSTER}
          allowDeselect={false}
          error={errors.cluster}
          onChange={(value) => change({ clusterId: !value || value === DEFAULT_CLUSTER ? "" : value }, "cluster")}
        />
        <Select
          label="Environment Template"
          description="The infrastructure as code that creates each instance."
          required
          searchable
          placeholder="Choose a template"
          data={templateData}
          value={values.templateId}
          allowDeselect={false}
          error={errors.environmentTemplate}
          nothingFoundMessage="No template matches"
          onChange={chooseTemplate}
        />
        <Select
          label="Environment Template Version"
          description={noActive ? undefined : "Only active versions can be chosen."}
          required
          placeholder={template ? "Choose a version" : "Choose a template first"}
          disabled={!template}
          data={versionData}
          value={values.versionId}
          allowDeselect={false}
          error={
            errors.environmentTemplateVersion ??
            (noActive ? "This template has no active version: activate one on its page first." : undefined)
          }
          onChange={chooseVersion}
        />
      </SimpleGrid>
      <Fieldset legend="Resources">
        <Stack gap="sm">
          <SimpleGrid cols={{ base: 1, sm: 3 }}>
            <TextInput
              label="CPU"
              description='Cores, e.g. "8" or "500m".'
              required
              value={values.cpu}
              error={errors["resources.cpu"]}
              onChange={(event) => change({ cpu: event.currentTarget.value }, "resources.cpu")}
            />
            <TextInput
              label="Memory"
              description='e.g. "64Gi".'
              required
              value={values.memory}
              error={errors["resources.memory"]}
              onChange={(event) => change({ memory: event.currentTarget.value }, "resources.memory")}
            />
            <TextInput
              label="Storage"
              description='e.g. "100Gi".'
              required
              value={values.storage}
              error={errors["resources.storage"]}
              onChange={(event) => change({ storage: event.currentTarget.value }, "resources.storage")}
            />
            <NumberInput
              label="GPU Count"
              description="0 for a CPU-only profile."
              min={0}
              max={1024}
              allowDecimal={false}
              allowNegative={false}
              value={values.gpuCount}
              error={errors["resources.gpuCount"]}
              onChange={setGpuCount}
            />
            <Select
              label="GPU Vendor"
              data={VENDORS.map((v) => ({ ...v, disabled: values.gpuCount === 0 ? v.value !== "CPU" : v.value === "CPU" }))}
              value={values.gpuVendor}
              allowDeselect={false}
              error={errors["resources.gpuVendor"]}
              onChange={(value) => value && change({ gpuVendor: value as Vendor }, "resources.gpuVendor")}
            />
            <Autocomplete
              label="GPU Model"
              description={knownModels.length > 0 ? `Optional; the clusters have: ${knownModels.join(", ")}.` : "Optional, e.g. H100 80GB."}
              disabled={values.gpuCount === 0}
              data={knownModels}
              value={values.gpuModel}
              error={errors["resources.gpuModel"]}
              onChange={(value) => change({ gpuModel: value }, "resources.gpuModel")}
            />
          </SimpleGrid>
          {modelWarning && (
            <Text size="xs" c="orange" role="status">
              {modelWarning}
            </Text>
          )}
          {errors.resources && (
            <Text size="xs" c="red" role="alert">
              {errors.resources}
            </Text>
          )}
        </Stack>
      </Fieldset>
      <Fieldset legend="Time limits">
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <NumberInput
            label="Auto-stop after (minutes)"
            description={`Default for new instances; owners can extend it. ${values.autoStopMinutes ? formatMinutes(values.autoStopMinutes) + "." : "Empty: none."}`}
            min={15}
            allowDecimal={false}
            allowNegative={false}
            value={values.autoStopMinutes}
            error={errors["timeLimits.autoStopMinutes"]}
            onChange={(value) => change({ autoStopMinutes: typeof value === "number" ? value : "" }, "timeLimits.autoStopMinutes")}
          />
          <NumberInput
            label="Maximum lifetime (minutes)"
            description={`No instance runs longer, nothing extends it. ${values.maxLifetimeMinutes ? formatMinutes(values.maxLifetimeMinutes) + "." : "Empty: none."}`}
            min={15}
            allowDecimal={false}
            allowNegative={false}
            value={values.maxLifetimeMinutes}
            error={errors["timeLimits.maxLifetimeMinutes"]}
            onChange={(value) => change({ maxLifetimeMinutes: typeof value === "number" ? value : "" }, "timeLimits.maxLifetimeMinutes")}
          />
        </SimpleGrid>
      </Fieldset>
      <SimpleGrid cols={{ base: 1, md: 2 }} spacing="xl">
        <KeyValueEditor
          label="Labels"
          name="labels"
          description="Attached to the compute instances launched from this profile."
          value={values.labels}
          errors={errors}
          onChange={(labels) => change({ labels }, "labels")}
        />
        <KeyValueEditor
          label="Annotations"
          name="annotations"
          description="Descriptive metadata attached to the compute instances launched from this profile."
          value={values.annotations}
          errors={errors}
          onChange={(annotations) => change({ annotations }, "annotations")}
        />
      </SimpleGrid>
    </Stack>
  );
}
