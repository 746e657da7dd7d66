import { Alert, Anchor, Breadcrumbs, Button, Card, Divider, Group, Stack, Text, TextInput, Textarea, Title } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { showDeploying } from "./deployToast";
import { IconDeviceFloppy, IconInfoCircle, IconPlayerPlay } from "@tabler/icons-react";
import { useMemo, useState, type FormEvent } from "react";
import { Link, useNavigate, useParams } from "react-router-dom";
import { useMutation, useQuery } from "urql";

import { useProject } from "../../app/project";
import { whyNot } from "../../components/actions";
import { describeError, errorsByField } from "../../components/errors";
import { FormErrors } from "../../components/FormErrors";
import { KeyValueEditor, toPairs, type Pair } from "../../components/KeyValueEditor";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import { StatusBadge } from "../../components/StatusBadge";
import { graphql } from "../../gql";
import type { InstanceEditFormQuery } from "../../gql/graphql";
import { FixedInputs, InputControl, inputErrorsByName, inputFields, isOverridable, SENSITIVE_MASK, type InputField } from "../catalog/inputs";
import { InstanceDeployDocument, ReasonButton } from "./actions";

export const InstanceEditFormDocument = graphql(`
  query InstanceEditForm($id: ID!) {
    computeInstance(id: $id) {
      id
      name
      displayName
      description
      status
      updatedAt
      outdated
      profileName
      ...InstanceActions
      labels {
        key
        value
      }
      annotations {
        key
        value
      }
      inputs {
        key
        value
      }
      project {
        id
        name
      }
      profile {
        id
        displayName
        inputSettings {
          name
          value
          required
          override
          allowedValues
        }
        environmentTemplateVersion {
          id
          inputs {
            name
            type
            description
            required
            default
            options
            pattern
            min
            max
            sensitive
          }
        }
      }
    }
  }
`);

export const InstanceUpdateDocument = graphql(`
  mutation InstanceUpdate($input: UpdateComputeInstanceInput!) {
    updateComputeInstance(input: $input) {
      computeInstance {
        id
        displayName
        description
        status
        updatedAt
        labels {
          key
          value
        }
        annotations {
          key
          value
        }
        inputs {
          key
          value
        }
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

type Instance = NonNullable<InstanceEditFormQuery["computeInstance"]>;

function filled(pairs: Pair[]): Pair[] {
  return pairs.filter((pair) => pair.key.trim() || pair.value.trim());
}

/** The instance's values of the inputs users may change (hidden ones start empty). */
function currentValues(fields: readonly InputField[], inputs: readonly { key: string; value: string }[]): Record<string, string> {
  const byKey = new Map(inputs.map((input) => [input.key, input.value]));
  const values: Record<string, string> = {};
  for (const field of fields) {
    if (!isOverridable(field)) continue;
    const value = byKey.get(field.name) ?? "";
    values[field.name] = field.sensitive && value === SENSITIVE_MASK ? "" : value;
    if (field.type === "BOOLEAN" && !values[field.name]) values[field.name] = "false";
  }
  return values;
}

function EditForm({ instance, project }: { instance: Instance; project: string }) {
  const navigate = useNavigate();
  const overview = `/p/${project}/instances/${instance.id}`;
  const fields = useMemo(
    () => (instance.profile ? inputFields(instance.profile.environmentTemplateVersion.inputs, instance.profile.inputSettings) : []),
    [instance.profile],
  );
  const editable = fields.filter(isOverridable);
  const fixedValues = Object.fromEntries(instance.inputs.map((input) => [input.key, input.value]));
  const initial = useMemo(() => currentValues(fields, instance.inputs), [fields, instance.inputs]);
  const [displayName, setDisplayName] = useState(instance.displayName);
  const [description, setDescription] = useState(instance.description ?? "");
  const [labels, setLabels] = useState<Pair[]>(toPairs(instance.labels));
  const [annotations, setAnnotations] = useState<Pair[]>(toPairs(instance.annotations));
  const [values, setValues] = useState<Record<string, string>>(initial);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [sentInputs, setSentInputs] = useState<string[]>([]);
  const [pending, setPending] = useState<"save" | "deploy" | null>(null);
  const [, update] = useMutation(InstanceUpdateDocument);
  const [, deploy] = useMutation(InstanceDeployDocument);

  const inputsChanged = editable.some((field) => (values[field.name] ?? "") !== (initial[field.name] ?? ""));
  const { byName: inputErrors, remaining } = inputErrorsByName(errors, sentInputs, editable.map((f) => f.name));

  const hiddenHint = (field: InputField) => {
    const had = instance.inputs.some((input) => input.key === field.name);
    if (!had) return "Hidden. Leave it empty to use the profile's value.";
    if (inputsChanged && !values[field.name]) {
      return "Hidden. Saving changed inputs replaces them all: type this value again, or it reverts to the profile's.";
    }
    return "Hidden. Leave it empty to keep the current value.";
  };

  const save = async (andDeploy: boolean): Promise<void> => {
    const keptLabels = filled(labels);
    const keptAnnotations = filled(annotations);
    setLabels(keptLabels);
    setAnnotations(keptAnnotations);
    // Inputs are sent only when changed (the list given replaces the instance's), never a masked value.
    const inputs = inputsChanged
      ? editable.filter((field) => (values[field.name] ?? "").trim() !== "").map((field) => ({ key: field.name, value: values[field.name].trim() }))
      : null;
    setPending(andDeploy ? "deploy" : "save");
    const result = await update({
      input: {
        id: instance.id,
        displayName: displayName.trim(),
        description: description.trim(),
        labels: keptLabels,
        annotations: keptAnnotations,
        inputs,
      },
    });
    setSentInputs(inputs ? inputs.map((input) => input.key) : []);
    const payload = result.data?.updateComputeInstance;
    if (result.error || !payload) {
      setPending(null);
      setErrors({ "": describeError(result.error) ?? "The changes were not saved." });
      return;
    }
    if (payload.userErrors.length) {
      setPending(null);
      setErrors(errorsByField(payload.userErrors));
      return;
    }
    setErrors({});
    if (!andDeploy) {
      setPending(null);
      notifications.show({ color: "green", title: "Changes saved", message: "They apply at the next deploy." });
      navigate(overview);
      return;
    }
    const deployed = await deploy({ id: instance.id });
    setPending(null);
    const deployPayload = deployed.data?.deployComputeInstance;
    const failed = deployed.error ? describeError(deployed.error) : deployPayload?.userErrors.map((e) => e.message).join("; ");
    if (failed) {
      setErrors({ "": `The changes were saved, but not deployed: ${failed}` });
      return;
    }
    showDeploying(instance.id, `“${displayName.trim() || instance.name}” is queued for deployment with the changes.`);
    navigate(overview);
  };

  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    void save(false);
  };

  const deployReason = whyNot(instance.actions, "DEPLOY");

  return (
    <form onSubmit={onSubmit} noValidate aria-label="Edit Configuration">
      <Stack gap="md">
        <Card withBorder padding="lg">
          <Stack gap="sm">
            <Title order={4}>General</Title>
            <TextInput label="Name" value={instance.name} readOnly description="The name of an instance cannot change." />
            <TextInput label="Display name" value={displayName} onChange={(event) => setDisplayName(event.currentTarget.value)} error={errors.displayName} />
            <Textarea label="Description" autosize minRows={2} value={description} onChange={(event) => setDescription(event.currentTarget.value)} error={errors.description} />
          </Stack>
        </Card>

        <Card withBorder padding="lg">
          <Stack gap="sm">
            <Title order={4}>Inputs</Title>
            {instance.outdated && (
              <Alert color="yellow" icon={<IconInfoCircle size={18} />}>
                The profile changed since this instance was launched: the inputs below follow the profile as it is now, while the instance keeps the
                settings it was launched with. The server checks the values against those.
              </Alert>
            )}
            {!instance.profile ? (
              <>
                <Text size="sm" c="dimmed">
                  Profile “{instance.profileName}” is no longer available: its inputs cannot be changed.
                </Text>
                <FixedInputs
                  title="Current values"
                  fields={instance.inputs.map((input) => ({
                    name: input.key,
                    type: "STRING",
                    description: null,
                    required: false,
                    override: "NOT_ALLOWED",
                    allowedValues: [],
                    profileValue: input.value,
                    options: [],
                    pattern: null,
                    min: null,
                    max: null,
                    sensitive: false,
                  }))}
                />
              </>
            ) : (
              <>
                {editable.length === 0 && (
                  <Text size="sm" c="dimmed">
                    The profile lets users change no input.
                  </Text>
                )}
                {editable.map((field) => (
                  <InputControl
                    key={field.name}
                    field={field}
                    value={values[field.name] ?? ""}
                    onChange={(value) => setValues((current) => ({ ...current, [field.name]: value }))}
                    error={inputErrors[field.name]}
                    sensitiveHint={hiddenHint(field)}
                  />
                ))}
                {fields.some((field) => !isOverridable(field)) && (
                  <>
                    {editable.length > 0 && <Divider />}
                    <FixedInputs fields={fields.filter((field) => !isOverridable(field))} values={fixedValues} />
                  </>
                )}
              </>
            )}
          </Stack>
        </Card>

        <Card withBorder padding="lg">
          <Stack gap="md">
            <Title order={4}>Metadata</Title>
            <KeyValueEditor label="Labels" name="labels" value={labels} onChange={setLabels} errors={errors} />
            <KeyValueEditor label="Annotations" name="annotations" value={annotations} onChange={setAnnotations} errors={errors} />
          </Stack>
        </Card>

        <FormErrors title="Not saved" errors={remaining} placed={["displayName", "description", "labels", "annotations"]} />

        <Group justify="flex-end" gap="sm">
          <Button variant="subtle" component={Link} to={overview}>
            Cancel
          </Button>
          <Button type="submit" variant="default" leftSection={<IconDeviceFloppy size={16} />} loading={pending === "save"} disabled={pending !== null}>
            Save Changes
          </Button>
          <ReasonButton reason={deployReason} leftSection={<IconPlayerPlay size={16} />} loading={pending === "deploy"} disabled={pending !== null} onClick={() => void save(true)}>
            Deploy
          </ReasonButton>
        </Group>
        <Text size="xs" c="dimmed" ta="right">
          Save Changes keeps the status: the changes apply at the next deploy. Deploy saves them and deploys at once.
        </Text>
      </Stack>
    </form>
  );
}

/** "Edit Configuration" of a compute instance: labels, annotations and the inputs users may change. */
export function EditInstancePage() {
  const { project } = useProject();
  const { id = "" } = useParams();
  const base = `/p/${project}`;
  const [{ data, error }, refetch] = useQuery({ query: InstanceEditFormDocument, variables: { id }, requestPolicy: "network-only" });

  if (error && !data) {
    return <ErrorState message={describeError(error) ?? "The compute instance could not be loaded."} onRetry={() => refetch({ requestPolicy: "network-only" })} />;
  }
  if (!data) return <Loading label="Loading the configuration" />;
  const instance = data.computeInstance;
  if (!instance) {
    return (
      <EmptyState title="This compute instance does not exist" action={<Button component={Link} to={`${base}/instances`}>Back to Compute Instances</Button>}>
        It may have been deleted, or it is no longer shared with this project.
      </EmptyState>
    );
  }
  // The API says whether the caller may change it (a project it is shared with only reads it).
  const refused = whyNot(instance.actions, "UPDATE");
  if (refused) return <ErrorState message={refused} />;
  return (
    <Stack gap="md">
      <Breadcrumbs>
        <Anchor component={Link} to={`${base}/instances`}>
          Compute Instances
        </Anchor>
        <Anchor component={Link} to={`${base}/instances/${instance.id}`}>
          {instance.displayName}
        </Anchor>
        <Text>Edit Configuration</Text>
      </Breadcrumbs>
      <Group gap="sm">
        <Title order={2}>Edit Configuration</Title>
        <StatusBadge status={instance.status} />
      </Group>
      <EditForm key={instance.id} instance={instance} project={project} />
    </Stack>
  );
}
