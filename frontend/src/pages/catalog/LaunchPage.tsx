import { Anchor, Breadcrumbs, Button, Card, Divider, Grid, Group, Stack, Text, TextInput, Textarea, Title } from "@mantine/core";
import { notifications } from "@mantine/notifications";

import { showDeploying } from "../instances/deployToast";
import { IconDeviceFloppy, IconRocket } from "@tabler/icons-react";
import { useMemo, useState, type FormEvent } from "react";
import { Link, useNavigate, useParams } from "react-router-dom";
import { useMutation, useQuery } from "urql";

import { useProject } from "../../app/project";
import { describeError, errorsByField } from "../../components/errors";
import { FormErrors } from "../../components/FormErrors";
import { KeyValueEditor, type Pair } from "../../components/KeyValueEditor";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import { graphql } from "../../gql";
import type { CatalogSkuQuery } from "../../gql/graphql";
import { FixedInputs, InputControl, inputErrorsByName, inputFields, initialInputValues, isOverridable, missingInputs, type InputField } from "./inputs";
import { AllocationBadge, ResourceGrid, SkuIcon } from "./resources";
import { CatalogSkuDocument } from "./SkuPage";

export const CatalogInstanceCreateDocument = graphql(`
  mutation CatalogInstanceCreate($input: CreateComputeInstanceInput!) {
    createComputeInstance(input: $input) {
      computeInstance {
        id
        name
        status
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

type Profile = NonNullable<CatalogSkuQuery["computeProfile"]>;

/** Kubernetes object names: what the server checks (dns_label), to say it before a round trip. */
const NAME_RULE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function nameProblem(name: string): string | undefined {
  if (!name) return "Required";
  if (name.length > 63) return "At most 63 characters";
  if (!NAME_RULE.test(name)) return "Lowercase letters, digits and “-”; it must start and end with a letter or digit";
  return undefined;
}

/** Rows with something in them: empty rows are dropped rather than sent. */
function filled(pairs: Pair[]): Pair[] {
  return pairs.filter((pair) => pair.key.trim() || pair.value.trim());
}

/** The fields the form shows errors next to. */
const PLACED = ["name", "displayName", "description", "labels", "annotations", "project"];

function LaunchForm({ profile, project }: { profile: Profile; project: string }) {
  const navigate = useNavigate();
  const fields = useMemo(() => inputFields(profile.environmentTemplateVersion.inputs, profile.inputSettings), [profile]);
  const editable = fields.filter(isOverridable);
  const fixed = fields.filter((field) => !isOverridable(field));
  const [name, setName] = useState("");
  const [displayName, setDisplayName] = useState("");
  const [description, setDescription] = useState("");
  const [labels, setLabels] = useState<Pair[]>([]);
  const [annotations, setAnnotations] = useState<Pair[]>([]);
  const [values, setValues] = useState<Record<string, string>>(() => initialInputValues(fields));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [sentInputs, setSentInputs] = useState<string[]>([]);
  const [local, setLocal] = useState<Record<string, string>>({});
  const [pending, setPending] = useState<"save" | "deploy" | null>(null);
  const [, create] = useMutation(CatalogInstanceCreateDocument);

  const { byName: inputErrors, remaining } = inputErrorsByName(errors, sentInputs, editable.map((f) => f.name));

  const submit = async (deploy: boolean) => {
    const problems: Record<string, string> = {};
    const nameError = nameProblem(name.trim());
    if (nameError) problems.name = nameError;
    for (const [input, message] of Object.entries(missingInputs(editable, values))) problems[`input:${input}`] = message;
    setLocal(problems);
    if (Object.keys(problems).length) return;
    const keptLabels = filled(labels);
    const keptAnnotations = filled(annotations);
    setLabels(keptLabels);
    setAnnotations(keptAnnotations);
    // Only what the profile lets users choose, and only values given: the profile's apply to the rest.
    const inputs = editable
      .filter((field) => (values[field.name] ?? "").trim() !== "")
      .map((field) => ({ key: field.name, value: values[field.name].trim() }));
    setPending(deploy ? "deploy" : "save");
    const result = await create({
      input: {
        project,
        profile: profile.id,
        name: name.trim(),
        displayName: displayName.trim() || null,
        description: description.trim() || null,
        labels: keptLabels,
        annotations: keptAnnotations,
        inputs,
        deploy,
      },
    });
    setPending(null);
    setSentInputs(inputs.map((input) => input.key));
    if (result.error) {
      setErrors({ "": describeError(result.error) ?? "The instance could not be created." });
      return;
    }
    const payload = result.data?.createComputeInstance;
    if (payload?.userErrors.length) {
      setErrors(errorsByField(payload.userErrors));
      return;
    }
    const instance = payload?.computeInstance;
    if (!instance) return;
    setErrors({});
    if (deploy) showDeploying(instance.id, `Compute instance “${instance.name}” is queued for deployment.`);
    else notifications.show({ color: "green", title: "Saved", message: `Compute instance “${instance.name}” is saved as Not Deployed: deploy it when you are ready.` });
    navigate(`/p/${project}/instances/${instance.id}`);
  };

  // Enter saves (Not Deployed): deploying takes resources, so it is always an explicit click.
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    void submit(false);
  };

  const fieldError = (field: InputField) => local[`input:${field.name}`] ?? inputErrors[field.name];

  return (
    <form onSubmit={onSubmit} noValidate aria-label={`Launch ${profile.displayName}`}>
      <Stack gap="md">
        <Card withBorder padding="lg">
          <Stack gap="sm">
            <Title order={4}>General</Title>
            <TextInput
              label="Name"
              description="A unique name in the project: lowercase letters, digits and “-”. It cannot be changed later."
              placeholder="gpu-instance-prod"
              required
              value={name}
              onChange={(event) => setName(event.currentTarget.value)}
              error={local.name ?? errors.name}
              autoComplete="off"
              data-autofocus
            />
            <TextInput
              label="Display name"
              description="What people see in lists; the name when left empty."
              value={displayName}
              onChange={(event) => setDisplayName(event.currentTarget.value)}
              error={errors.displayName}
            />
            <Textarea
              label="Description"
              autosize
              minRows={2}
              value={description}
              onChange={(event) => setDescription(event.currentTarget.value)}
              error={errors.description}
            />
          </Stack>
        </Card>

        <Card withBorder padding="lg">
          <Stack gap="sm">
            <Title order={4}>Configuration</Title>
            {editable.length === 0 && fixed.length === 0 && (
              <Text size="sm" c="dimmed">
                This SKU takes no inputs.
              </Text>
            )}
            {editable.length === 0 && fixed.length > 0 && (
              <Text size="sm" c="dimmed">
                The profile sets every input of this SKU.
              </Text>
            )}
            {editable.map((field) => (
              <InputControl
                key={field.name}
                field={field}
                value={values[field.name] ?? ""}
                onChange={(value) => setValues((current) => ({ ...current, [field.name]: value }))}
                error={fieldError(field)}
                sensitiveHint={field.profileValue ? "Hidden. Leave it empty to use the profile's value." : undefined}
              />
            ))}
            {fixed.length > 0 && (
              <>
                {editable.length > 0 && <Divider />}
                <FixedInputs fields={fixed} />
              </>
            )}
          </Stack>
        </Card>

        <Card withBorder padding="lg">
          <Stack gap="md">
            <Title order={4}>Metadata</Title>
            <KeyValueEditor
              label="Labels"
              name="labels"
              value={labels}
              onChange={setLabels}
              errors={errors}
              description="Attached to the instance's resources, with the profile's labels."
            />
            <KeyValueEditor
              label="Annotations"
              name="annotations"
              value={annotations}
              onChange={setAnnotations}
              errors={errors}
              description="Descriptive metadata, attached with the profile's annotations."
            />
          </Stack>
        </Card>

        <FormErrors title="The instance was not created" errors={remaining} placed={PLACED} />

        <Group justify="flex-end" gap="sm">
          <Button variant="subtle" component={Link} to={`/p/${project}/catalog/${profile.id}`}>
            Cancel
          </Button>
          <Button type="submit" variant="default" leftSection={<IconDeviceFloppy size={16} />} loading={pending === "save"} disabled={pending !== null}>
            Save
          </Button>
          <Button leftSection={<IconRocket size={16} />} loading={pending === "deploy"} disabled={pending !== null} onClick={() => void submit(true)}>
            Deploy
          </Button>
        </Group>
        <Text size="xs" c="dimmed" ta="right">
          Save keeps the instance Not Deployed, to deploy later; Deploy queues it at once.
        </Text>
      </Stack>
    </form>
  );
}

/** Launch a compute instance from a SKU: only the inputs its profile lets users choose. */
export function LaunchPage() {
  const { project } = useProject();
  const { profileId = "" } = useParams();
  const [{ data, error }, refetch] = useQuery({ query: CatalogSkuDocument, variables: { id: profileId }, requestPolicy: "cache-and-network" });
  const catalog = `/p/${project}/catalog`;

  if (error && !data) {
    return <ErrorState message={describeError(error) ?? "The SKU could not be loaded."} onRetry={() => refetch({ requestPolicy: "network-only" })} />;
  }
  if (!data) return <Loading label="Loading the SKU" />;
  const profile = data.computeProfile;
  if (!profile) {
    return (
      <EmptyState title="This SKU does not exist" action={<Button component={Link} to={catalog}>Back to the catalog</Button>}>
        It may have been deleted, or it is no longer shared with this project.
      </EmptyState>
    );
  }
  return (
    <Stack gap="md">
      <Breadcrumbs>
        <Anchor component={Link} to={catalog}>
          Catalog
        </Anchor>
        <Anchor component={Link} to={`${catalog}/${profile.id}`}>
          {profile.displayName}
        </Anchor>
        <Text>Launch</Text>
      </Breadcrumbs>
      <Title order={2}>Launch a compute instance</Title>
      <Grid gap="md">
        <Grid.Col span={{ base: 12, lg: 8 }}>
          <LaunchForm profile={profile} project={project} />
        </Grid.Col>
        <Grid.Col span={{ base: 12, lg: 4 }} order={{ base: -1, lg: 1 }}>
          <Card withBorder padding="lg">
            <Stack gap="sm">
              <Group wrap="nowrap" gap="sm">
                <SkuIcon url={profile.iconUrl} size={40} />
                <Stack gap={0} style={{ minWidth: 0 }}>
                  <Text fw={600}>{profile.displayName}</Text>
                  <Text size="xs" c="dimmed" ff="monospace">
                    {profile.name}
                  </Text>
                </Stack>
              </Group>
              <Group gap={6}>
                <AllocationBadge allocation={profile.allocationType} />
                <Anchor component={Link} to={`${catalog}`} size="sm">
                  Change compute profile
                </Anchor>
              </Group>
              <ResourceGrid resources={profile.resources} cols={{ base: 2 }} />
            </Stack>
          </Card>
        </Grid.Col>
      </Grid>
    </Stack>
  );
}
