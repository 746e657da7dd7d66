import { Anchor, Breadcrumbs, Button, Group, Paper, Stack, Stepper, Text, Title } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { IconAlertTriangle } from "@tabler/icons-react";
import { useMemo, useReducer, type FormEvent } from "react";
import { Link, useNavigate, useParams } from "react-router-dom";
import { useMutation, useQuery } from "urql";

import { useProject } from "../../app/project";
import { describeError, errorsByField, fieldKey, type ServerError } from "../../components/errors";
import { FormErrors } from "../../components/FormErrors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import type { ProfileWizardOptionsQuery } from "../../gql/graphql";
import { EndUserStep } from "./EndUserStep";
import { GeneralStep } from "./GeneralStep";
import { ProfileCreateDocument, ProfileDetailDocument, ProfileUpdateDocument, ProfileWizardOptionsDocument } from "./operations";
import { InputSettingsStep, OutputSettingsStep } from "./SettingsSteps";
import {
  createInput,
  initialWizard,
  PLACED_FIELDS,
  stepOfField,
  STEPS,
  stepsWithErrors,
  updateInput,
  validateAll,
  validateStep,
  wizardReducer,
  type Profile,
  type Template,
  type WizardMode,
} from "./wizardModel";

type Cluster = ProfileWizardOptionsQuery["clusters"][number];

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

/** The four steps (the state in wizardModel's reducer), Back / Next, and saving. */
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
  const [state, dispatch] = useReducer(wizardReducer, null, () => initialWizard(mode, profile));
  const { values, errors, active, visited } = state;
  const [{ fetching: creating }, create] = useMutation(ProfileCreateDocument);
  const [{ fetching: updating }, update] = useMutation(ProfileUpdateDocument);

  const template = templates.find((t) => t.id === values.templateId);
  const version = template?.versions.find((v) => v.id === values.versionId);
  const last = STEPS.length - 1;
  const stepErrors = useMemo(() => stepsWithErrors(errors), [errors]);
  const base = `/p/${project}/studio/profiles`;
  const goTo = (step: number) => dispatch({ type: "goTo", step });

  /** Leaves the step shown only when its required fields are filled in. */
  function stepChecked(): boolean {
    const problems = validateStep(values, active, mode);
    if (Object.keys(problems).length === 0) return true;
    dispatch({ type: "setErrors", errors: problems, merge: true });
    return false;
  }

  function next() {
    if (stepChecked()) goTo(Math.min(active + 1, last));
  }

  /** The server's answer: the saved profile's id, or why not (a failure, or errors by field). */
  async function save(): Promise<{ id: string | null; failure: string | null; userErrors: readonly ServerError[]; warnings?: readonly { message: string }[] }> {
    if (mode === "create") {
      const result = await create({ input: createInput(values, project, version) });
      const payload = result.data?.createComputeProfile;
      if (result.error || !payload) return { id: null, failure: describeError(result.error) ?? "Could not add the compute profile.", userErrors: [] };
      return { id: payload.computeProfile?.id ?? null, failure: null, userErrors: payload.userErrors, warnings: payload.warnings };
    }
    const result = await update({ input: updateInput(values, profile?.id ?? "", version) });
    const payload = result.data?.updateComputeProfile;
    if (result.error || !payload) return { id: null, failure: describeError(result.error) ?? "Could not save the compute profile.", userErrors: [] };
    return { id: payload.computeProfile?.id ?? null, failure: null, userErrors: payload.userErrors, warnings: payload.warnings };
  }

  async function submit() {
    const problems = validateAll(values, mode);
    if (Object.keys(problems).length > 0) {
      dispatch({ type: "setErrors", errors: problems });
      goTo(stepOfField(Object.keys(problems)[0]) ?? active);
      return;
    }
    const saved = await save();
    if (saved.failure) {
      dispatch({ type: "setErrors", errors: { "": saved.failure } });
      return;
    }
    if (saved.userErrors.length > 0) {
      dispatch({ type: "setErrors", errors: errorsByField(saved.userErrors) });
      // Show the step that holds the first error.
      const step = saved.userErrors.map((e) => stepOfField(fieldKey(e.field))).find((s) => s !== null);
      if (step !== undefined && step !== null) goTo(step);
      return;
    }
    dispatch({ type: "setErrors", errors: {} });
    if (!saved.id) return;
    notifications.show({
      color: "green",
      message: mode === "create" ? `Compute profile "${values.name}" added.` : `Compute profile "${values.name}" saved.`,
    });
    // What the server warns of (a GPU model no cluster has): saved all the same.
    for (const warning of saved.warnings ?? []) notifications.show({ color: "orange", message: warning.message, autoClose: false });
    navigate(`${base}/${saved.id}`);
  }

  function onSubmit(event: FormEvent) {
    event.preventDefault();
    if (mode === "create" && active < last) next();
    else void submit();
  }

  const stepContent = [
    <GeneralStep key="general" mode={mode} state={state} dispatch={dispatch} profile={profile} templates={templates} clusters={clusters} />,
    <EndUserStep key="end-user" state={state} dispatch={dispatch} />,
    <InputSettingsStep
      key="inputs"
      version={version}
      settings={values.inputs}
      errors={errors}
      onChange={(name, patch, field) => dispatch({ type: "setInput", name, patch, field })}
    />,
    <OutputSettingsStep
      key="outputs"
      version={version}
      settings={values.outputs}
      errors={errors}
      onChange={(name, patch, field) => dispatch({ type: "setOutput", name, patch, field })}
    />,
  ];
  const saving = creating || updating;

  return (
    <form onSubmit={onSubmit} noValidate>
      <Stack>
        <Stepper
          active={active}
          onStepClick={(step) => {
            // Forward only through steps whose required fields are filled in.
            if (mode === "create" && step > active && !stepChecked()) return;
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
