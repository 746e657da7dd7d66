import {
  Alert,
  Anchor,
  Badge,
  Breadcrumbs,
  Button,
  Checkbox,
  Collapse,
  Group,
  NumberInput,
  Paper,
  Radio,
  Select,
  SimpleGrid,
  Stack,
  Text,
  TextInput,
  Title,
} from "@mantine/core";
import { IconChevronDown, IconChevronRight, IconInfoCircle, IconRestore, IconRocket } from "@tabler/icons-react";
import { useEffect, useRef, useState, type FormEvent, type ReactNode } from "react";
import { Link, useNavigate, useSearchParams } from "react-router-dom";
import { useMutation, useQuery } from "urql";

import { useProject } from "../../app/project";
import { describeError, errorsByField, unplacedErrors } from "../../components/errors";
import { toPairs, type Pair } from "../../components/KeyValueEditor";
import { statusLabel } from "../../components/StatusBadge";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import type { ServiceLaunchTemplatesQuery, ServicesComputeInstancesQuery } from "../../gql/graphql";
import {
  CommandEditor,
  EnvEditor,
  PortsEditor,
  VendorBadge,
  pairsInput,
  portsInput,
  toPortRows,
  type PortRow,
} from "../instance-templates/spec";
import { ServiceCreateDocument, ServiceLaunchTemplatesDocument, ServicesComputeInstancesDocument } from "./queries";

type Template = ServiceLaunchTemplatesQuery["instanceTemplates"][number];
type Instance = ServicesComputeInstancesQuery["computeInstances"]["edges"][number]["node"];

const PLACED = ["project", "computeInstance", "template", "name", "displayName", "gpuCount", "command", "env", "ports", "start"];

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

function whyNotSelectable(instance: Instance): string | null {
  if (instance.status === "SUCCESS") return null;
  switch (instance.status) {
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

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function templateSpec(template: Template | undefined) {
  return {
    command: template ? [...template.command] : [],
    env: toPairs(template?.env),
    ports: toPortRows(template?.ports),
  };
}

function Section({ title, children }: { title: string; children: ReactNode }) {
  return (
    <Paper withBorder p="md" radius="md">
      <Stack gap="sm">
        <Title order={4}>{title}</Title>
        {children}
      </Stack>
    </Paper>
  );
}

export function LaunchServicePage() {
  const { project } = useProject();
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const [instancesResult, refetchInstances] = useQuery({
    query: ServicesComputeInstancesDocument,
    variables: { project },
    requestPolicy: "cache-and-network",
  });
  const [templatesResult, refetchTemplates] = useQuery({
    query: ServiceLaunchTemplatesDocument,
    variables: { project },
    requestPolicy: "cache-and-network",
  });
  const [{ fetching: creating }, create] = useMutation(ServiceCreateDocument);

  const [computeInstance, setComputeInstance] = useState<string | null>(params.get("computeInstance"));
  const [templateId, setTemplateId] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [nameTouched, setNameTouched] = useState(false);
  const [displayName, setDisplayName] = useState("");
  const [gpuCount, setGpuCount] = useState<number | "">(1);
  const [gpuTouched, setGpuTouched] = useState(false);
  const [command, setCommand] = useState<string[]>([]);
  const [env, setEnv] = useState<Pair[]>([]);
  const [ports, setPorts] = useState<PortRow[]>([]);
  const [advanced, setAdvanced] = useState(false);
  const [start, setStart] = useState(true);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [failure, setFailure] = useState<string | null>(null);

  const instances = (instancesResult.data?.computeInstances.edges ?? [])
    .map((edge) => edge.node)
    .filter((node) => node.project.name === project);
  const templates = templatesResult.data?.instanceTemplates ?? [];
  const template = templates.find((t) => t.id === templateId);
  const instance = instances.find((i) => i.id === computeInstance);

  function chooseTemplate(next: Template) {
    setTemplateId(next.id);
    if (!gpuTouched) setGpuCount(defaultGpuCount(next));
    if (!nameTouched) setName(next.name);
    const spec = templateSpec(next);
    setCommand(spec.command);
    setEnv(spec.env);
    setPorts(spec.ports);
  }

  // ?template=<id> (from a template's "Launch"): choose it once the templates are there.
  const preselected = useRef(false);
  useEffect(() => {
    if (preselected.current || !templatesResult.data) return;
    preselected.current = true;
    const wanted = templatesResult.data.instanceTemplates.find((t) => t.id === params.get("template"));
    if (wanted) chooseTemplate(wanted);
  }, [templatesResult.data]);

  // Only one compute instance can run services: choose it.
  const autoChosen = useRef(false);
  useEffect(() => {
    if (autoChosen.current || !instancesResult.data) return;
    autoChosen.current = true;
    const deployed = instancesResult.data.computeInstances.edges
      .map((edge) => edge.node)
      .filter((node) => node.project.name === project && node.status === "SUCCESS");
    if (!computeInstance && deployed.length === 1) setComputeInstance(deployed[0].id);
  }, [instancesResult.data, computeInstance, project]);

  const loadError = instancesResult.error ?? templatesResult.error;
  if (loadError && (!instancesResult.data || !templatesResult.data)) {
    return (
      <ErrorState
        message={describeError(loadError) ?? "Could not load the compute instances and templates."}
        onRetry={() => {
          refetchInstances({ requestPolicy: "network-only" });
          refetchTemplates({ requestPolicy: "network-only" });
        }}
      />
    );
  }
  if (!instancesResult.data || !templatesResult.data) return <Loading label="Loading compute instances and templates" />;

  const selectable = instances.filter((i) => i.status === "SUCCESS");
  if (instances.length === 0 || selectable.length === 0) {
    return (
      <Stack>
        <Title order={2}>Launch service</Title>
        <EmptyState
          title={instances.length === 0 ? "No compute instance yet" : "No deployed compute instance"}
          action={
            <Button component={Link} to={`/p/${project}/${instances.length === 0 ? "catalog" : "instances"}`}>
              {instances.length === 0 ? "Open the catalog" : "Go to compute instances"}
            </Button>
          }
        >
          Services run inside a deployed (Success) compute instance of this project.{" "}
          {instances.length === 0
            ? "Launch one from the catalog first."
            : "None is deployed yet: deploy one, or wait until its deployment succeeds."}
        </EmptyState>
      </Stack>
    );
  }

  const use = instance ? gpuUse(instance) : null;
  const original = templateSpec(template);
  const overridden = {
    command: !same(command, original.command),
    env: !same(env, original.env),
    ports: !same(ports, original.ports),
  };
  const vendorMismatch =
    template && instance && template.vendor !== "CPU" && gpuCount !== 0 && instance.resources.gpuVendor !== template.vendor
      ? `This template is for ${template.vendor} GPUs, but "${instance.displayName || instance.name}" has ${
          instance.resources.gpuCount && instance.resources.gpuVendor !== "CPU" ? `${instance.resources.gpuVendor} GPUs` : "no GPUs"
        }: choose another template, or set the GPU count to 0.`
      : null;

  async function submit(event: FormEvent) {
    event.preventDefault();
    setFailure(null);
    const missing: Record<string, string> = {};
    if (!computeInstance) missing.computeInstance = "Choose a compute instance";
    if (!templateId) missing.template = "Choose a template";
    if (!name.trim()) missing.name = "A name is required";
    if (Object.keys(missing).length) {
      setErrors(missing);
      return;
    }
    setErrors({});
    const result = await create({
      input: {
        project,
        computeInstance: computeInstance!,
        template: templateId!,
        name: name.trim(),
        displayName: displayName.trim() || null,
        gpuCount: gpuCount === "" ? null : gpuCount,
        command: overridden.command ? command : null,
        env: overridden.env ? pairsInput(env) : null,
        ports: overridden.ports ? portsInput(ports) : null,
        start,
      },
    });
    const payload = result.data?.createServiceInstance;
    if (result.error || !payload) {
      setFailure(describeError(result.error) ?? "No answer from the server.");
      return;
    }
    if (payload.userErrors.length || !payload.serviceInstance) {
      const found = errorsByField(payload.userErrors);
      setErrors(found);
      if (Object.keys(found).some((key) => /^(command|env|ports)(\.|$)/.test(key))) setAdvanced(true);
      return;
    }
    navigate(`/p/${project}/services/${payload.serviceInstance.id}`);
  }

  const unplaced = unplacedErrors(errors, PLACED);
  const notSelectable = instances.filter((i) => i.status !== "SUCCESS");

  return (
    <Stack maw={1080}>
      <Breadcrumbs>
        <Anchor component={Link} to={`/p/${project}/services`}>
          Service Instances
        </Anchor>
        <Text>Launch</Text>
      </Breadcrumbs>
      <Title order={2}>Launch service</Title>
      <form onSubmit={submit} noValidate>
        <Stack>
          <Section title="Where">
            <Select
              label="Compute instance"
              placeholder="Choose a deployed compute instance"
              required
              searchable
              allowDeselect={false}
              maw={480}
              value={computeInstance}
              onChange={setComputeInstance}
              error={
                errors.computeInstance ??
                (instance && whyNotSelectable(instance)
                  ? `"${instance.displayName || instance.name}" cannot run services: ${whyNotSelectable(instance)}.`
                  : undefined)
              }
              description={
                notSelectable.length
                  ? `Only deployed (Success) compute instances can run services: ${notSelectable.length} of this project's ${
                      instances.length
                    } ${notSelectable.length === 1 ? "is" : "are"} not selectable.`
                  : "Services run inside a deployed compute instance of this project."
              }
              data={instances.map((i) => {
                const reason = whyNotSelectable(i);
                return {
                  value: i.id,
                  label: reason ? `${i.displayName || i.name} (${statusLabel(i.status)}: ${reason})` : i.displayName || i.name,
                  disabled: reason !== null,
                };
              })}
            />
            {instance && use && (
              <Text size="sm" c="dimmed" data-testid="instance-gpus">
                {use.total === 0 || instance.resources.gpuVendor === "CPU"
                  ? "This compute instance has no GPUs: services run on its CPUs."
                  : `This compute instance has ${use.total} × ${instance.resources.gpuVendor}${
                      instance.resources.gpuModel ? ` ${instance.resources.gpuModel}` : ""
                    } GPU${use.total === 1 ? "" : "s"}; ${use.used} held by its other service instances, ${use.free} free.`}
              </Text>
            )}
          </Section>

          <Section title="Template">
            <Radio.Group
              value={templateId}
              onChange={(id) => {
                const next = templates.find((t) => t.id === id);
                if (next) chooseTemplate(next);
              }}
              label="Instance template"
              description="The image, command, ports and environment the service starts with."
              required
              error={errors.template}
            >
              {templates.length === 0 ? (
                <Text size="sm" c="dimmed" mt="xs">
                  No instance template is available: ask a project admin to add one in the studio.
                </Text>
              ) : (
                <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }} mt="xs">
                  {templates.map((t) => (
                    <Radio.Card key={t.id} value={t.id} radius="md" p="sm" aria-label={`${t.displayName} (${t.vendor})`}>
                      <Group wrap="nowrap" align="flex-start" gap="sm">
                        <Radio.Indicator mt={2} />
                        <Stack gap={4} style={{ minWidth: 0, flex: 1 }}>
                          <Group justify="space-between" wrap="nowrap" gap="xs">
                            <Text fw={600} size="sm" lineClamp={2}>
                              {t.displayName}
                            </Text>
                            <VendorBadge vendor={t.vendor} />
                          </Group>
                          <Text size="xs" c="dimmed" ff="monospace" lineClamp={1}>
                            {t.image}
                          </Text>
                          {t.description && (
                            <Text size="xs" c="dimmed" lineClamp={2}>
                              {t.description}
                            </Text>
                          )}
                          {!t.project && (
                            <Badge size="xs" variant="outline" color="teal">
                              Global
                            </Badge>
                          )}
                        </Stack>
                      </Group>
                    </Radio.Card>
                  ))}
                </SimpleGrid>
              )}
            </Radio.Group>
          </Section>

          <Section title="Service">
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              <TextInput
                label="Name"
                description="Unique in the compute instance; lowercase letters, digits and “-”."
                required
                value={name}
                onChange={(event) => {
                  setName(event.currentTarget.value);
                  setNameTouched(true);
                }}
                error={errors.name}
              />
              <TextInput
                label="Display name"
                description="Defaults to the name."
                value={displayName}
                onChange={(event) => setDisplayName(event.currentTarget.value)}
                error={errors.displayName}
              />
            </SimpleGrid>
            <NumberInput
              label="GPU count"
              description={
                use && instance
                  ? `The compute instance has ${use.total} GPU${use.total === 1 ? "" : "s"} (${use.free} free). ${
                      template?.vendor === "CPU" ? "A CPU template runs without GPUs." : "0 runs the service without GPUs."
                    }`
                  : "1 for a GPU template, 0 for a CPU one."
              }
              min={0}
              max={64}
              allowDecimal={false}
              allowNegative={false}
              maw={320}
              value={gpuCount}
              onChange={(value) => {
                setGpuTouched(true);
                setGpuCount(typeof value === "number" ? value : value === "" ? "" : Number(value));
              }}
              error={errors.gpuCount}
            />
            {!errors.gpuCount && start && use && typeof gpuCount === "number" && gpuCount > use.free && gpuCount <= use.total && (
              <Alert color="yellow" icon={<IconInfoCircle size={18} />}>
                Only {use.free} of the compute instance&apos;s GPUs {use.free === 1 ? "is" : "are"} free: stop another service
                instance first, lower the GPU count, or clear &quot;Start now&quot; to create it stopped.
              </Alert>
            )}
            {vendorMismatch && (
              <Alert color="yellow" icon={<IconInfoCircle size={18} />}>
                {vendorMismatch}
              </Alert>
            )}
            <Checkbox
              label="Start now"
              description="Otherwise it is created stopped: start it later from its page."
              checked={start}
              onChange={(event) => setStart(event.currentTarget.checked)}
              error={errors.start}
            />
          </Section>

          <Paper withBorder p="md" radius="md">
            <Group justify="space-between">
              <Button
                variant="subtle"
                px={0}
                onClick={() => setAdvanced((open) => !open)}
                leftSection={advanced ? <IconChevronDown size={16} /> : <IconChevronRight size={16} />}
                aria-expanded={advanced}
                aria-controls="launch-advanced"
              >
                Advanced: command, environment and ports
              </Button>
              {(overridden.command || overridden.env || overridden.ports) && (
                <Badge color="orange" variant="light">
                  Overrides the template
                </Badge>
              )}
            </Group>
            <Collapse expanded={advanced} id="launch-advanced">
              <Stack mt="sm" gap="lg">
                {!template ? (
                  <Text size="sm" c="dimmed">
                    Choose a template first: these settings start as the template&apos;s.
                  </Text>
                ) : (
                  <>
                    <Group justify="space-between">
                      <Text size="sm" c="dimmed">
                        Prefilled from &quot;{template.displayName}&quot;. Only what you change is sent; the rest stays the
                        template&apos;s.
                      </Text>
                      <Button
                        size="xs"
                        variant="default"
                        leftSection={<IconRestore size={14} />}
                        disabled={!overridden.command && !overridden.env && !overridden.ports}
                        onClick={() => {
                          setCommand(original.command);
                          setEnv(original.env);
                          setPorts(original.ports);
                        }}
                      >
                        Reset to the template&apos;s
                      </Button>
                    </Group>
                    <CommandEditor value={command} onChange={setCommand} errors={errors} />
                    <EnvEditor value={env} onChange={setEnv} errors={errors} />
                    <PortsEditor value={ports} onChange={setPorts} errors={errors} />
                  </>
                )}
              </Stack>
            </Collapse>
          </Paper>

          {failure && (
            <Alert color="red" role="alert" title="Not launched">
              {failure}
            </Alert>
          )}
          {unplaced.length > 0 && (
            <Alert color="red" role="alert" title="Please fix the following">
              <Stack gap={2}>
                {unplaced.map((message) => (
                  <Text key={message} size="sm">
                    {message}
                  </Text>
                ))}
              </Stack>
            </Alert>
          )}
          <Group justify="flex-end">
            <Button variant="default" component={Link} to={`/p/${project}/services`}>
              Cancel
            </Button>
            <Button type="submit" loading={creating} leftSection={<IconRocket size={16} />}>
              {start ? "Launch" : "Create"}
            </Button>
          </Group>
        </Stack>
      </form>
    </Stack>
  );
}
