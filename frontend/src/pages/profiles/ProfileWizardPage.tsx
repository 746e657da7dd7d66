import {
  Anchor,
  Breadcrumbs,
  Button,
  Fieldset,
  Group,
  NumberInput,
  Paper,
  Select,
  SimpleGrid,
  Stack,
  Stepper,
  Text,
  TextInput,
  Textarea,
  Title,
} from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { IconAlertTriangle } from "@tabler/icons-react";
import { useCallback, useMemo, useState } from "react";
import { Link, useNavigate, useParams } from "react-router-dom";
import { useMutation, useQuery } from "urql";

import { useProject } from "../../app/project";
import { describeError, errorsByField, fieldKey, type ServerError } from "../../components/errors";
import { FormErrors } from "../../components/FormErrors";
import { KeyValueEditor } from "../../components/KeyValueEditor";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import type { ProfileWizardOptionsQuery, Vendor } from "../../gql/graphql";
import { statusLabel } from "../../components/StatusBadge";
import { ProfileCreateDocument, ProfileDetailDocument, ProfileUpdateDocument, ProfileWizardOptionsDocument } from "./operations";
import { ProfileIcon } from "./ProfileIcon";
import { ReadmePreview } from "./ReadmePreview";
import { InputSettingsStep, OutputSettingsStep } from "./SettingsSteps";
import {
  createInput,
  emptyValues,
  PLACED_FIELDS,
  settingsFor,
  stepOfField,
  STEPS,
  stepsWithErrors,
  updateInput,
  validateAll,
  validateStep,
  valuesFromProfile,
  type InputSettingState,
  type OutputSettingState,
  type Profile,
  type Template,
  type WizardMode,
  type WizardValues,
} from "./wizardModel";

type Cluster = ProfileWizardOptionsQuery["clusters"][number];

const DEFAULT_CLUSTER = "__default__";
const VENDORS: { value: Vendor; label: string }[] = [
  { value: "NVIDIA", label: "NVIDIA" },
  { value: "AMD", label: "AMD" },
  { value: "INTEL", label: "Intel" },
  { value: "ASCEND", label: "Ascend" },
  { value: "CPU", label: "None (CPU only)" },
];

/** Add Compute Profile (studio/profiles/new) and Edit (studio/profiles/:id/edit). */
export function ProfileWizardPage() {
  const { project } = useProject();
  const { id } = useParams();
  const mode: WizardMode = id ? "edit" : "create";
  const [options, refetchOptions] = useQuery({
    query: ProfileWizardOptionsDocument,
    variables: { project },
    requestPolicy: "cache-and-network",
  });
  const [profileResult, refetchProfile] = useQuery({
    query: ProfileDetailDocument,
    variables: { id: id ?? "" },
    pause: !id,
    requestPolicy: "network-only",
  });
  const base = `/p/${project}/studio/profiles`;
  const title = mode === "create" ? "Add Compute Profile" : "Edit Compute Profile";

  let body;
  if ((options.fetching && !options.data) || (id && profileResult.fetching && !profileResult.data)) {
    body = <Loading label={mode === "create" ? "Loading templates" : "Loading the compute profile"} />;
  } else if (options.error && !options.data) {
    body = (
      <ErrorState
        message={describeError(options.error) ?? "Could not load the environment templates."}
        onRetry={() => refetchOptions({ requestPolicy: "network-only" })}
      />
    );
  } else if (id && profileResult.error && !profileResult.data) {
    body = (
      <ErrorState
        message={describeError(profileResult.error) ?? "Could not load the compute profile."}
        onRetry={() => refetchProfile({ requestPolicy: "network-only" })}
      />
    );
  } else if (id && !profileResult.data?.computeProfile) {
    body = <ErrorState message="This compute profile does not exist, or you may not see it." />;
  } else if (options.data && options.data.environmentTemplates.length === 0) {
    body = (
      <EmptyState
        title="No environment template yet"
        action={
          <Button component={Link} to={`/p/${project}/studio/templates`}>
            Go to Environment Templates
          </Button>
        }
      >
        A compute profile runs an environment template: add one (with an active version) first.
      </EmptyState>
    );
  } else if (options.data) {
    body = (
      <ProfileWizard
        key={id ?? "new"}
        mode={mode}
        project={project}
        profile={profileResult.data?.computeProfile ?? null}
        templates={options.data.environmentTemplates}
        clusters={options.data.clusters}
      />
    );
  }

  const profile = profileResult.data?.computeProfile;
  return (
    <Stack>
      <Breadcrumbs>
        <Anchor component={Link} to={base}>
          Compute Profiles
        </Anchor>
        {profile && (
          <Anchor component={Link} to={`${base}/${profile.id}`}>
            {profile.name}
          </Anchor>
        )}
        <Text>{mode === "create" ? "New" : "Edit"}</Text>
      </Breadcrumbs>
      <Title order={2}>{profile ? `${title}: ${profile.displayName}` : title}</Title>
      {body}
    </Stack>
  );
}

function versionLabel(version: { version: string; state: string }): string {
  return `${version.version} (${statusLabel(version.state)})`;
}

function ProfileWizard({
  mode,
  project,
  profile,
  templates,
  clusters,
}: {
  mode: WizardMode;
  project: string;
  profile: Profile | null;
  templates: readonly Template[];
  clusters: readonly Cluster[];
}) {
  const navigate = useNavigate();
  const [values, setValues] = useState<WizardValues>(() => (profile ? valuesFromProfile(profile) : emptyValues()));
  const [active, setActive] = useState(0);
  const [visited, setVisited] = useState(mode === "edit" ? STEPS.length - 1 : 0);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [saving, setSaving] = useState(false);
  const [iconStatus, setIconStatus] = useState<string>("none");
  const [, create] = useMutation(ProfileCreateDocument);
  const [, update] = useMutation(ProfileUpdateDocument);

  const template = templates.find((t) => t.id === values.templateId);
  const version = template?.versions.find((v) => v.id === values.versionId);
  const last = STEPS.length - 1;
  const stepErrors = useMemo(() => stepsWithErrors(errors), [errors]);
  const base = `/p/${project}/studio/profiles`;

  /** Changes values and forgets the errors of the fields changed. */
  const change = useCallback((patch: Partial<WizardValues>, ...errorKeys: string[]) => {
    setValues((old) => ({ ...old, ...patch }));
    if (errorKeys.length) {
      setErrors((old) => {
        const next = { ...old };
        for (const key of Object.keys(next)) {
          if (errorKeys.some((k) => key === k || key.startsWith(`${k}.`))) delete next[key];
        }
        return next;
      });
    }
  }, []);

  function chooseTemplate(templateId: string | null) {
    const chosen = templates.find((t) => t.id === templateId);
    const firstActive = chosen?.versions.find((v) => v.state === "ACTIVE");
    setValues((old) => ({
      ...old,
      templateId,
      versionId: firstActive?.id ?? null,
      ...settingsFor(firstActive, old.inputs, old.outputs),
    }));
    setErrors(({ environmentTemplate: _t, environmentTemplateVersion: _v, ...rest }) => rest);
  }

  function chooseVersion(versionId: string | null) {
    const chosen = template?.versions.find((v) => v.id === versionId);
    setValues((old) => ({ ...old, versionId, ...settingsFor(chosen, old.inputs, old.outputs) }));
    setErrors(({ environmentTemplateVersion: _v, ...rest }) => rest);
  }

  function setGpuCount(value: number | string) {
    const gpuCount = typeof value === "number" ? value : Number.parseInt(value, 10) || 0;
    setValues((old) => ({
      ...old,
      gpuCount,
      gpuVendor: gpuCount === 0 ? "CPU" : old.gpuVendor === "CPU" ? "NVIDIA" : old.gpuVendor,
    }));
    setErrors(({ "resources.gpuCount": _c, "resources.gpuVendor": _v, ...rest }) => rest);
  }

  function goTo(step: number) {
    setActive(step);
    setVisited((v) => Math.max(v, step));
  }

  function next() {
    const problems = validateStep(values, active, mode);
    if (Object.keys(problems).length > 0) {
      setErrors((old) => ({ ...old, ...problems }));
      return;
    }
    goTo(Math.min(active + 1, last));
  }

  async function submit() {
    const problems = validateAll(values, mode);
    if (Object.keys(problems).length > 0) {
      setErrors(problems);
      setActive(stepOfField(Object.keys(problems)[0]) ?? active);
      return;
    }
    setSaving(true);
    let userErrors: readonly ServerError[] = [];
    let savedId: string | null = null;
    let topError: string | null = null;
    try {
      if (mode === "create") {
        const result = await create({ input: createInput(values, project, version) });
        const payload = result.data?.createComputeProfile;
        if (result.error || !payload) topError = describeError(result.error) ?? "Could not add the compute profile.";
        else {
          userErrors = payload.userErrors;
          savedId = payload.computeProfile?.id ?? null;
        }
      } else if (profile) {
        const result = await update({ input: updateInput(values, profile.id, version) });
        const payload = result.data?.updateComputeProfile;
        if (result.error || !payload) topError = describeError(result.error) ?? "Could not save the compute profile.";
        else {
          userErrors = payload.userErrors;
          savedId = payload.computeProfile?.id ?? null;
        }
      }
    } finally {
      setSaving(false);
    }
    if (topError) {
      setErrors({ "": topError });
      return;
    }
    if (userErrors.length > 0) {
      setErrors(errorsByField(userErrors));
      // Show the step that holds the first error.
      const step = userErrors.map((e) => stepOfField(fieldKey(e.field))).find((s) => s !== null);
      if (step !== undefined && step !== null) goTo(step);
      return;
    }
    setErrors({});
    if (!savedId) return;
    notifications.show({
      color: "green",
      message: mode === "create" ? `Compute profile "${values.name}" added.` : `Compute profile "${values.name}" saved.`,
    });
    navigate(`${base}/${savedId}`);
  }

  function onSubmit(event: React.FormEvent) {
    event.preventDefault();
    if (mode === "create" && active < last) next();
    else void submit();
  }

  const setInput = (name: string, patch: Partial<InputSettingState>, errorKey: string) => {
    setValues((old) => ({ ...old, inputs: { ...old.inputs, [name]: { ...old.inputs[name], ...patch } } }));
    setErrors((old) => {
      const nextErrors = { ...old };
      for (const key of Object.keys(nextErrors)) if (key === errorKey || key.startsWith(`${errorKey}.`)) delete nextErrors[key];
      return nextErrors;
    });
  };
  const setOutput = (name: string, patch: Partial<OutputSettingState>, errorKey: string) => {
    setValues((old) => ({ ...old, outputs: { ...old.outputs, [name]: { ...old.outputs[name], ...patch } } }));
    setErrors(({ [errorKey]: _e, ...rest }) => rest);
  };

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
      label: `${c.displayName || c.name}${c.isDefault ? " (default)" : ""} · ${statusLabel(c.status)}`,
    })),
  ];

  const general = (
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
            <TextInput
              label="GPU Model"
              description="Optional, e.g. A100-80GB."
              disabled={values.gpuCount === 0}
              value={values.gpuModel}
              error={errors["resources.gpuModel"]}
              onChange={(event) => change({ gpuModel: event.currentTarget.value }, "resources.gpuModel")}
            />
          </SimpleGrid>
          {errors.resources && (
            <Text size="xs" c="red" role="alert">
              {errors.resources}
            </Text>
          )}
        </Stack>
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

  const endUser = (
    <Stack>
      <Group align="flex-start" wrap="nowrap" gap="lg">
        <TextInput
          label="Icon URL"
          description="The icon users see in the catalog: an http(s) URL or a data:image URL."
          placeholder="https://example.com/icon.png"
          value={values.iconUrl}
          error={errors.iconUrl}
          onChange={(event) => change({ iconUrl: event.currentTarget.value }, "iconUrl")}
          style={{ flex: 1 }}
        />
        <Stack gap={4} align="center">
          <Text size="xs" c="dimmed">
            Preview
          </Text>
          <ProfileIcon url={values.iconUrl} name={values.displayName || values.name || "Profile"} onStatus={setIconStatus} />
        </Stack>
      </Group>
      {iconStatus === "failed" && (
        <Text size="xs" c="orange" role="status">
          The image could not be loaded: users would see the default icon.
        </Text>
      )}
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <Textarea
          label="Readme"
          description="Markdown (or plain text) that tells users about the profile, with instructions if any."
          autosize
          minRows={12}
          maxRows={30}
          styles={{ input: { fontFamily: "var(--mantine-font-family-monospace)", fontSize: 13 } }}
          value={values.readme}
          error={errors.readme}
          onChange={(event) => change({ readme: event.currentTarget.value }, "readme")}
        />
        <Stack gap={4}>
          <div>
            <Text size="sm" fw={500}>
              Readme preview
            </Text>
            <Text size="xs" c="dimmed">
              As users will see it: rendered and sanitized by the server as you type.
            </Text>
          </div>
          <Paper withBorder p="md" radius="md" mih={200} data-testid="readme-preview">
            <ReadmePreview markdown={values.readme} />
          </Paper>
        </Stack>
      </SimpleGrid>
    </Stack>
  );

  const stepContent = [
    general,
    endUser,
    <InputSettingsStep key="inputs" version={version} settings={values.inputs} errors={errors} onChange={setInput} />,
    <OutputSettingsStep key="outputs" version={version} settings={values.outputs} errors={errors} onChange={setOutput} />,
  ];

  return (
    <form onSubmit={onSubmit} noValidate>
      <Stack>
        <Stepper
          active={active}
          onStepClick={(step) => {
            if (mode === "create" && step > active) {
              // Forward only through steps whose required fields are filled in.
              const problems = validateStep(values, active, mode);
              if (Object.keys(problems).length > 0) {
                setErrors((old) => ({ ...old, ...problems }));
                return;
              }
            }
            goTo(step);
          }}
          size="sm"
          wrap
        >
          {STEPS.map((label, index) => (
            <Stepper.Step
              key={label}
              label={label}
              color={stepErrors.has(index) ? "red" : undefined}
              description={stepErrors.has(index) ? "Has errors" : undefined}
              allowStepSelect={index <= visited || mode === "edit"}
              icon={stepErrors.has(index) ? <IconAlertTriangle size={16} /> : undefined}
              completedIcon={stepErrors.has(index) ? <IconAlertTriangle size={16} /> : undefined}
            >
              <Paper withBorder p={{ base: "sm", sm: "lg" }} radius="md" mt="md">
                {stepContent[index]}
              </Paper>
            </Stepper.Step>
          ))}
        </Stepper>
        <FormErrors title="The compute profile was not saved" errors={errors} placed={PLACED_FIELDS} />
        {stepErrors.size > 0 && !stepErrors.has(active) && (
          <Text size="sm" c="red">
            Some fields have errors: see the steps marked in red ({[...stepErrors].map((s) => STEPS[s]).join(", ")}).
          </Text>
        )}
        <Group justify="space-between">
          <Button variant="default" component={Link} to={profile ? `${base}/${profile.id}` : base}>
            Cancel
          </Button>
          <Group gap="sm">
            {active > 0 && (
              <Button variant="default" onClick={() => goTo(active - 1)}>
                Back
              </Button>
            )}
            {active < last &&
              (mode === "create" ? (
                <Button type="submit">Next</Button>
              ) : (
                <Button variant="default" onClick={next}>
                  Next
                </Button>
              ))}
            {(mode === "edit" || active === last) && (
              <Button type="submit" loading={saving}>
                {mode === "create" ? "Add Compute Profile" : "Save Changes"}
              </Button>
            )}
          </Group>
        </Group>
      </Stack>
    </form>
  );
}
