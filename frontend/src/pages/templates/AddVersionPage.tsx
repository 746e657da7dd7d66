import {
  Alert,
  Anchor,
  Box,
  Breadcrumbs,
  Button,
  Code,
  Grid,
  Group,
  List,
  Paper,
  Select,
  SimpleGrid,
  Stack,
  Text,
  TextInput,
  Title,
  UnstyledButton,
} from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { IconAlertTriangle, IconInfoCircle } from "@tabler/icons-react";
import { useMemo, useRef, useState } from "react";
import { Link, useNavigate, useParams, useSearchParams } from "react-router-dom";
import { useMutation, useQuery } from "urql";

import { useProject } from "../../app/project";
import { describeError, errorsByField, fieldKey, type ServerError } from "../../components/errors";
import { FormErrors } from "../../components/FormErrors";
import { ErrorState, Loading } from "../../components/states";
import type {
  AddEnvironmentTemplateVersionInput,
  EnvTemplateDetailQuery,
  EnvTemplateRevealedDefaultsQuery,
  VersionState,
} from "../../gql/graphql";
import { useCanManage, VERSION_STATES } from "./common";
import { InputsEditor, OutputsEditor, type InputDraft, type OutputDraft } from "./DefinitionsEditors";
import { EnvTemplateAddVersionDocument, EnvTemplateDetailDocument, EnvTemplateRevealedDefaultsDocument } from "./operations";
import { documentRanges, parseResourceProblem, problemLines, type ResourceProblem } from "./yamlProblems";
import { goToLine, YamlEditor } from "./YamlEditor";

type Template = NonNullable<EnvTemplateDetailQuery["environmentTemplate"]>;
type Version = Template["versions"][number];

const VARIABLES = [
  "instance.name",
  "instance.namespace",
  "instance.id",
  "profile.name",
  "resources.cpu",
  "resources.memory",
  "resources.storage",
  "resources.gpuCount",
  "resources.gpuVendor",
  "resources.gpuModel",
  "resources.gpuResourceName",
  "generated.token",
  "inputs.<name>",
];

const PLACED = ["version", "state", "resources", "inputs", "outputs"];

/** Studio > Environment Templates > a template > Add Version (studio/templates/:id/versions/new,
 * ?from=<version id> starts from a copy of that version). */
export function AddVersionPage() {
  const { project } = useProject();
  const { id = "" } = useParams();
  const [params] = useSearchParams();
  const canManage = useCanManage();
  const [{ data, fetching, error }, reexecute] = useQuery({ query: EnvTemplateDetailDocument, variables: { id } });
  const base = `/p/${project}/studio/templates`;
  const template = data?.environmentTemplate;
  const source = template?.versions.find((v) => v.id === params.get("from")) ?? null;
  // A sensitive default is shown masked: a copy asks for it (the template's admins only).
  const masked = Boolean(template && canManage(template) && source?.inputs.some((i) => i.sensitive && i.default != null));
  const [revealed] = useQuery({ query: EnvTemplateRevealedDefaultsDocument, variables: { id }, pause: !masked });

  let body;
  if (fetching && !data) body = <Loading label="Loading the environment template" />;
  else if (error && !data) {
    body = (
      <ErrorState
        message={describeError(error) ?? "Could not load the environment template."}
        onRetry={() => reexecute({ requestPolicy: "network-only" })}
      />
    );
  } else if (!template) {
    body = <ErrorState message="This environment template does not exist, or you may not see it." />;
  } else if (!canManage(template)) {
    body = <ErrorState message="You may not add versions to this template (built-in templates are changed by platform admins)." />;
  } else if (masked && revealed.error) {
    body = <ErrorState message={describeError(revealed.error) ?? "Could not read the version's sensitive defaults."} />;
  } else if (masked && !revealed.data) {
    body = <Loading label="Reading the version's sensitive defaults" />;
  } else {
    const from = source && masked ? withRevealedDefaults(source, revealed.data) : source;
    body = <AddVersionForm key={from?.id ?? "empty"} template={template} from={from} />;
  }

  return (
    <Stack>
      <Breadcrumbs>
        <Anchor component={Link} to={base}>
          Environment Templates
        </Anchor>
        {template && (
          <Anchor component={Link} to={`${base}/${template.id}`}>
            {template.name}
          </Anchor>
        )}
        <Text>Add Version</Text>
      </Breadcrumbs>
      <Title order={2}>{template ? `Add Version: ${template.displayName}` : "Add Version"}</Title>
      {body}
    </Stack>
  );
}

/** The version with its sensitive inputs' defaults as the API revealed them. */
function withRevealedDefaults(version: Version, revealed: EnvTemplateRevealedDefaultsQuery | undefined): Version {
  const defaults = new Map(
    (revealed?.environmentTemplate?.versions.find((v) => v.id === version.id)?.inputs ?? []).map((i) => [i.name, i.default]),
  );
  return {
    ...version,
    inputs: version.inputs.map((i) => (i.sensitive && defaults.has(i.name) ? { ...i, default: defaults.get(i.name) ?? null } : i)),
  };
}

function inputDraft(d: Version["inputs"][number]): InputDraft {
  return {
    name: d.name,
    type: d.type,
    description: d.description ?? "",
    required: d.required,
    default: d.default ?? "",
    options: [...d.options],
    pattern: d.pattern ?? "",
    min: d.min ?? "",
    max: d.max ?? "",
    sensitive: d.sensitive,
  };
}

function ProblemPlace({ problem }: { problem: ResourceProblem }) {
  const parts: string[] = [];
  if (problem.document) parts.push(`Document ${problem.document}${problem.object ? ` (${problem.object})` : ""}`);
  if (problem.path) parts.push(problem.path);
  if (problem.line) parts.push(`Line ${problem.line}, column ${problem.column}`);
  if (parts.length === 0) parts.push("Resources");
  return (
    <Text size="sm" fw={600} component="span">
      {parts.join(" › ")}
    </Text>
  );
}

/** Errors of the rows that changed go; when rows are added or removed the indexes shift, so all
 * of the list's errors go. */
function withoutChangedRows<T>(errors: Record<string, string>, list: string, before: readonly T[], after: readonly T[]) {
  const stale = (key: string) => {
    if (key !== list && !key.startsWith(`${list}.`)) return false;
    if (before.length !== after.length || key === list) return true;
    const index = Number(key.split(".")[1]);
    return before[index] !== after[index];
  };
  return Object.fromEntries(Object.entries(errors).filter(([key]) => !stale(key)));
}

function AddVersionForm({ template, from }: { template: Template; from: Version | null }) {
  const navigate = useNavigate();
  const { project } = useProject();
  const [version, setVersion] = useState("");
  const [state, setState] = useState<VersionState>("DRAFT");
  const [resources, setResources] = useState(from?.resources ?? "");
  const [inputs, setInputs] = useState<InputDraft[]>(from ? from.inputs.map(inputDraft) : []);
  const [outputs, setOutputs] = useState<OutputDraft[]>(
    from ? from.outputs.map((o) => ({ name: o.name, value: o.value, description: o.description ?? "" })) : [],
  );
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [problems, setProblems] = useState<ResourceProblem[]>([]);
  const [{ fetching }, add] = useMutation(EnvTemplateAddVersionDocument);
  const editorRef = useRef<HTMLTextAreaElement | null>(null);
  const ranges = useMemo(() => documentRanges(resources), [resources]);
  const errorLines = useMemo(() => problemLines(problems, ranges), [problems, ranges]);
  const base = `/p/${project}/studio/templates/${template.id}`;

  function jumpTo(problem: ResourceProblem) {
    const line = problem.line ?? (problem.document ? (ranges[problem.document - 1]?.start ?? 0) + 1 : 1);
    goToLine(editorRef.current, line);
  }

  async function submit(event: React.FormEvent) {
    event.preventDefault();
    const local: Record<string, string> = {};
    if (!version.trim()) local.version = "Required";
    if (!resources.trim()) local.resources = "Write at least one Kubernetes manifest";
    setProblems([]);
    if (Object.keys(local).length > 0) {
      setErrors(local);
      return;
    }
    const input: AddEnvironmentTemplateVersionInput = {
      template: template.id,
      version: version.trim(),
      state,
      resources,
      inputs: inputs.map((i) => ({
        name: i.name.trim(),
        type: i.type,
        description: i.description.trim() || null,
        required: i.required,
        default: i.default === "" ? null : i.default,
        options: i.options.length > 0 ? i.options : null,
        pattern: i.pattern === "" ? null : i.pattern,
        min: i.min === "" ? null : i.min,
        max: i.max === "" ? null : i.max,
        sensitive: i.sensitive,
      })),
      outputs: outputs.map((o) => ({ name: o.name.trim(), value: o.value, description: o.description.trim() || null })),
    };
    const result = await add({ input });
    const payload = result.data?.addEnvironmentTemplateVersion;
    if (result.error || !payload) {
      setErrors({ "": describeError(result.error) ?? "Could not add the version." });
      return;
    }
    if (payload.userErrors.length > 0 || !payload.version) {
      const all = payload.userErrors as readonly ServerError[];
      const isResources = (e: ServerError) => {
        const key = fieldKey(e.field);
        return key === "resources" || key.startsWith("resources.");
      };
      setErrors(errorsByField(all.filter((e) => !isResources(e))));
      setProblems(all.filter(isResources).map((e) => parseResourceProblem(e.message)));
      return;
    }
    notifications.show({
      color: "green",
      message: `Version ${payload.version.version} added (${VERSION_STATES.find((s) => s.value === payload.version?.state)?.label ?? payload.version.state}).`,
    });
    navigate(base);
  }

  const resourceError = errors.resources ?? (problems.length > 0 ? true : undefined);
  const versions = template.versions.map((v) => v.version);

  return (
    <form onSubmit={submit} noValidate>
      <Stack>
        {from && (
          <Alert color="blue" icon={<IconInfoCircle size={18} />}>
            Starting from a copy of version {from.version}. Versions cannot change once added: give this one a new
            version number.
          </Alert>
        )}
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <TextInput
            label="Version"
            description={versions.length ? `Existing: ${versions.join(", ")}` : 'e.g. "1.0.0". It cannot change once added.'}
            placeholder="1.0.0"
            required
            value={version}
            error={errors.version}
            onChange={(e) => {
              setVersion(e.currentTarget.value);
              setErrors(({ version: _v, ...rest }) => rest);
            }}
            data-autofocus
          />
          <Select
            label="State"
            description={VERSION_STATES.find((s) => s.value === state)?.help}
            data={VERSION_STATES.map(({ value, label }) => ({ value, label }))}
            value={state}
            allowDeselect={false}
            error={errors.state}
            onChange={(value) => value && setState(value as VersionState)}
          />
        </SimpleGrid>
        <Grid gap="md">
          <Grid.Col span={{ base: 12, lg: 8 }}>
            <YamlEditor
              id="version-resources"
              label="Resources (YAML)"
              description="The Kubernetes manifests, separated by ---, with {{ ... }} placeholders in their strings."
              required
              value={resources}
              onChange={(value) => {
                setResources(value);
                setErrors(({ resources: _r, ...rest }) => rest);
              }}
              error={resourceError}
              errorLines={errorLines}
              editorRef={editorRef}
              describedBy={problems.length ? "version-resources-problems" : undefined}
            />
          </Grid.Col>
          <Grid.Col span={{ base: 12, lg: 4 }}>
            <Box style={{ position: "sticky", top: 72 }}>
              {problems.length > 0 ? (
                <Alert
                  id="version-resources-problems"
                  color="red"
                  icon={<IconAlertTriangle size={18} />}
                  title={`${problems.length} problem${problems.length === 1 ? "" : "s"} in the resources`}
                  role="alert"
                >
                  <List spacing="xs" size="sm" data-testid="resource-problems">
                    {problems.map((problem, index) => (
                      <List.Item key={index}>
                        <UnstyledButton
                          onClick={() => jumpTo(problem)}
                          aria-label={`Go to ${problem.document ? `document ${problem.document}` : problem.line ? `line ${problem.line}` : "the resources"}`}
                          style={{ textAlign: "left" }}
                        >
                          <ProblemPlace problem={problem} />
                        </UnstyledButton>
                        <Text size="sm">{problem.message}</Text>
                      </List.Item>
                    ))}
                  </List>
                </Alert>
              ) : (
                <Paper withBorder p="md" radius="md">
                  <Text size="sm" fw={500} mb={4}>
                    Variables
                  </Text>
                  <Text size="xs" c="dimmed" mb="xs">
                    Write them as {"{{ name }}"} inside strings; a string that is exactly one placeholder takes the value's
                    type. The server checks every manifest against the Kubernetes schema when the version is added.
                  </Text>
                  <Group gap={4}>
                    {VARIABLES.map((v) => (
                      <Code key={v}>{v}</Code>
                    ))}
                  </Group>
                </Paper>
              )}
            </Box>
          </Grid.Col>
        </Grid>
        <Paper withBorder p="md" radius="md">
          <InputsEditor
            value={inputs}
            onChange={(next) => {
              setErrors((old) => withoutChangedRows(old, "inputs", inputs, next));
              setInputs(next);
            }}
            errors={errors}
          />
        </Paper>
        <Paper withBorder p="md" radius="md">
          <OutputsEditor
            value={outputs}
            onChange={(next) => {
              setErrors((old) => withoutChangedRows(old, "outputs", outputs, next));
              setOutputs(next);
            }}
            errors={errors}
          />
        </Paper>
        <FormErrors title="The version was not added" errors={errors} placed={PLACED} />
        <Group justify="space-between">
          <Button variant="default" component={Link} to={base}>
            Cancel
          </Button>
          <Button type="submit" loading={fetching}>
            Add Version
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
