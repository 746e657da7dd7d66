import { useConnection } from "../../hooks/useConnection";
import {
  ActionIcon,
  Alert,
  Anchor,
  Badge,
  Breadcrumbs,
  Button,
  Card,
  CopyButton,
  DataList,
  Grid,
  Group,
  SimpleGrid,
  Stack,
  Table,
  Text,
  Timeline,
  Title,
  Tooltip,
} from "@mantine/core";
import {
  IconApps,
  IconCheck,
  IconCopy,
  IconEdit,
  IconEye,
  IconPlayerPlay,
  IconRefreshAlert,
  IconRocket,
  IconShare,
  IconTrash,
  IconWreckingBall,
} from "@tabler/icons-react";
import { useState, type ReactNode } from "react";
import { Link, useNavigate, useParams } from "react-router-dom";
import { useQuery, useSubscription } from "urql";

import { useProject } from "../../app/project";
import { describeError } from "../../components/errors";
import { SharingModal } from "../../components/SharingModal";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import { StatusBadge, statusLabel } from "../../components/StatusBadge";
import { graphql } from "../../gql";
import type { InstanceOverviewFieldsFragment, InstanceStatusLiveSubscription } from "../../gql/graphql";
import { AllocationBadge, ResourceGrid } from "../catalog/resources";
import { DeleteInstanceModal, DestroyInstanceModal, ReasonButton, deleteBlocked, deployBlocked, destroyBlocked, useInstanceActions, type InstanceRef } from "./actions";
import { RunStatusBadge } from "./RunStatusBadge";
import { SharingBadge } from "./SharingBadge";

export const InstanceOverviewFieldsDocument = graphql(`
  fragment InstanceOverviewFields on ComputeInstance {
    id
    name
    displayName
    description
    profileName
    status
    statusMessage
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
    outputs {
      key
      value
    }
    allocationType
    resources {
      cpu
      memory
      storage
      gpuCount
      gpuVendor
      gpuModel
    }
    templateName
    templateVersion
    createdAt
    updatedAt
    project {
      id
      name
      displayName
    }
    profile {
      id
      name
      displayName
    }
    outdated
    sharing {
      mode
      projects {
        id
        name
        displayName
      }
    }
    cluster {
      id
      name
      displayName
      status
    }
    services {
      id
      name
      displayName
      status
      statusMessage
      templateName
      template {
        id
        displayName
      }
    }
    runs {
      id
      action
      status
      message
      attempts
      createdAt
      startedAt
      finishedAt
    }
  }
`);

export const InstanceOverviewDocument = graphql(`
  query InstanceOverview($id: ID!) {
    computeInstance(id: $id) {
      ...InstanceOverviewFields
    }
  }
`);

export const InstanceStatusLiveDocument = graphql(`
  subscription InstanceStatusLive($id: ID!) {
    computeInstanceStatus(id: $id) {
      status
      message
      at
      instance {
        ...InstanceOverviewFields
      }
    }
  }
`);

type Instance = InstanceOverviewFieldsFragment;
type StatusEvent = InstanceStatusLiveSubscription["computeInstanceStatus"];

interface Live {
  latest: StatusEvent;
  /** The statuses as they came, oldest first. */
  history: { status: string; message: string | null; at: string }[];
}

function time(value: string): number {
  const parsed = Date.parse(value);
  return Number.isNaN(parsed) ? 0 : parsed;
}

function reduceLive(previous: Live | undefined, data: InstanceStatusLiveSubscription): Live {
  const event = data.computeInstanceStatus;
  // Another instance (the page was reused for another id): start over.
  const history = previous && previous.latest.instance.id === event.instance.id ? previous.history : [];
  const last = history[history.length - 1];
  const same = last && last.status === event.status && last.message === (event.message ?? null);
  return {
    latest: event,
    history: same ? history : [...history, { status: event.status, message: event.message ?? null, at: event.at }].slice(-12),
  };
}

function when(value: string | null | undefined): string {
  return value ? new Date(value).toLocaleString() : "—";
}

function Section({ title, action, children }: { title: string; action?: ReactNode; children: ReactNode }) {
  return (
    <Card withBorder padding="lg" component="section" aria-label={title}>
      <Group justify="space-between" mb="sm" wrap="wrap" gap="xs">
        <Title order={4}>{title}</Title>
        {action}
      </Group>
      {children}
    </Card>
  );
}

function Pairs({ pairs, empty, label, copy }: { pairs: readonly { key: string; value: string }[]; empty: string; label: string; copy?: boolean }) {
  if (pairs.length === 0) {
    return (
      <Text size="sm" c="dimmed">
        {empty}
      </Text>
    );
  }
  return (
    <Table.ScrollContainer minWidth={320}>
      <Table verticalSpacing={6} aria-label={label}>
        <Table.Tbody>
          {pairs.map((pair) => (
            <Table.Tr key={pair.key}>
              <Table.Td w="35%">
                <Text size="sm" ff="monospace" style={{ wordBreak: "break-all" }}>
                  {pair.key}
                </Text>
              </Table.Td>
              <Table.Td>
                <Group gap={4} wrap="nowrap" align="flex-start">
                  <Text size="sm" style={{ wordBreak: "break-all" }}>
                    {pair.value}
                  </Text>
                  {copy && (
                    <CopyButton value={pair.value}>
                      {({ copied, copy: doCopy }) => (
                        <Tooltip label={copied ? "Copied" : "Copy"}>
                          <ActionIcon variant="subtle" color={copied ? "teal" : "gray"} size="sm" onClick={doCopy} aria-label={`Copy ${pair.key}`}>
                            {copied ? <IconCheck size={14} /> : <IconCopy size={14} />}
                          </ActionIcon>
                        </Tooltip>
                      )}
                    </CopyButton>
                  )}
                </Group>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

function Runs({ runs }: { runs: Instance["runs"] }) {
  if (runs.length === 0) {
    return (
      <Text size="sm" c="dimmed">
        No runs yet: deploying the instance starts one.
      </Text>
    );
  }
  return (
    <Table.ScrollContainer minWidth={760}>
      <Table verticalSpacing="xs" aria-label="Runs">
        <Table.Thead>
          <Table.Tr>
            <Table.Th miw={90}>Action</Table.Th>
            <Table.Th miw={120}>Status</Table.Th>
            <Table.Th>Message</Table.Th>
            <Table.Th>Queued</Table.Th>
            <Table.Th>Started</Table.Th>
            <Table.Th>Finished</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {runs.map((run) => (
            <Table.Tr key={run.id}>
              <Table.Td>
                <Text size="sm" fw={500}>
                  {statusLabel(run.action)}
                </Text>
                {run.attempts > 1 && (
                  <Text size="xs" c="dimmed">
                    {run.attempts} attempts
                  </Text>
                )}
              </Table.Td>
              <Table.Td>
                <RunStatusBadge status={run.status} />
              </Table.Td>
              <Table.Td>
                <Text size="sm" c={run.status === "FAILED" ? "red" : undefined} style={{ wordBreak: "break-word" }}>
                  {run.message || "—"}
                </Text>
              </Table.Td>
              <Table.Td>
                <Text size="sm">{when(run.createdAt)}</Text>
              </Table.Td>
              <Table.Td>
                <Text size="sm">{when(run.startedAt)}</Text>
              </Table.Td>
              <Table.Td>
                <Text size="sm">{when(run.finishedAt)}</Text>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

function Services({ instance, project, status, readOnly }: { instance: Instance; project: string; status: string; readOnly: boolean }) {
  const base = `/p/${project}`;
  const launchReason = readOnly
    ? "Only the instance's own project may launch services in it."
    : status !== "SUCCESS"
      ? "Services run in a deployed instance: launch one once the status is Success."
      : null;
  return (
    <Section
      title="Services"
      action={
        <Group gap="xs">
          <Button variant="subtle" size="xs" component={Link} to={`${base}/services`} leftSection={<IconApps size={14} />}>
            Service Instances
          </Button>
          <ReasonButton size="xs" reason={launchReason} to={`${base}/services/new?computeInstance=${instance.id}`} leftSection={<IconRocket size={14} />}>
            Launch service
          </ReasonButton>
        </Group>
      }
    >
      {instance.services.length === 0 ? (
        <Text size="sm" c="dimmed">
          No GPU service runs in this instance yet.
        </Text>
      ) : (
        <Table.ScrollContainer minWidth={480}>
          <Table verticalSpacing="xs" aria-label="Services">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Template</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {instance.services.map((service) => (
                <Table.Tr key={service.id}>
                  <Table.Td>
                    <Text size="sm" fw={500}>
                      {service.displayName}
                    </Text>
                    <Text size="xs" c="dimmed" ff="monospace">
                      {service.name}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <StatusBadge status={service.status} />
                    {service.statusMessage && (
                      <Text size="xs" c="dimmed">
                        {service.statusMessage}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm">{service.template?.displayName ?? service.templateName}</Text>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Section>
  );
}

/** One compute instance: its live status, configuration, outputs, runs and services. */
export function InstancePage() {
  const { project } = useProject();
  const { id = "" } = useParams();
  const navigate = useNavigate();
  const base = `/p/${project}`;
  const [{ data, error }, refetch] = useQuery({ query: InstanceOverviewDocument, variables: { id }, requestPolicy: "cache-and-network" });
  const [{ data: live }] = useSubscription({ query: InstanceStatusLiveDocument, variables: { id }, pause: !id }, reduceLive);
  const actions = useInstanceActions();
  const [working, setWorking] = useState<"deploy" | "destroy" | null>(null);
  const [confirmDestroy, setConfirmDestroy] = useState(false);
  const [deleting, setDeleting] = useState<InstanceRef | null>(null);
  const [sharing, setSharing] = useState(false);

  if (error && !data) {
    return <ErrorState message={describeError(error) ?? "The compute instance could not be loaded."} onRetry={() => refetch({ requestPolicy: "network-only" })} />;
  }
  if (!data) return <Loading label="Loading the compute instance" />;
  const queried = data.computeInstance;
  if (!queried) {
    return (
      <EmptyState title="This compute instance does not exist" action={<Button component={Link} to={`${base}/instances`}>Back to Compute Instances</Button>}>
        It may have been deleted, or it is no longer shared with this project.
      </EmptyState>
    );
  }

  // The newest of what the query and the live events tell; the event's status as it came.
  const event = live?.latest;
  const fromEvent = event !== undefined && event.instance.id === queried.id && time(event.instance.updatedAt) >= time(queried.updatedAt);
  const instance: Instance = fromEvent ? event.instance : queried;
  const status = fromEvent ? event.status : queried.status;
  const message = fromEvent ? (event.message ?? null) : (queried.statusMessage ?? null);
  const readOnly = instance.project.name !== project;
  const ref: InstanceRef = {
    id: instance.id,
    name: instance.name,
    displayName: instance.displayName,
    status,
    serviceCount: instance.services.length,
    readOnly,
  };
  const reload = () => refetch({ requestPolicy: "network-only" });

  const deploy = async () => {
    setWorking("deploy");
    await actions.deploy(ref);
    setWorking(null);
    reload();
  };
  const destroy = async () => {
    setWorking("destroy");
    await actions.destroy(ref);
    setWorking(null);
    setConfirmDestroy(false);
    reload();
  };

  const history = live?.history ?? [];

  return (
    <Stack gap="md">
      <Breadcrumbs>
        <Anchor component={Link} to={`${base}/instances`}>
          Compute Instances
        </Anchor>
        <Text>{instance.displayName}</Text>
      </Breadcrumbs>

      <Group justify="space-between" align="flex-start" wrap="wrap" gap="md">
        <Stack gap={4} style={{ minWidth: 0 }}>
          <Group gap="sm" wrap="wrap">
            <Title order={2}>{instance.displayName}</Title>
            <span data-testid="instance-status">
              <StatusBadge status={status} />
            </span>
          </Group>
          <Text size="sm" c="dimmed" ff="monospace">
            {instance.name}
          </Text>
          {message && (
            <Text size="sm" c={status === "FAILED" ? "red" : "dimmed"} data-testid="instance-status-message">
              {message}
            </Text>
          )}
          {instance.description && <Text size="sm">{instance.description}</Text>}
        </Stack>
        <Group gap="xs" wrap="wrap">
          <ReasonButton
            variant="default"
            leftSection={<IconEdit size={16} />}
            reason={readOnly ? "Only the instance's own project may change it." : null}
            to={`${base}/instances/${instance.id}/edit`}
          >
            Edit Configuration
          </ReasonButton>
          <ReasonButton leftSection={<IconPlayerPlay size={16} />} reason={deployBlocked(ref)} loading={working === "deploy"} onClick={() => void deploy()}>
            Deploy
          </ReasonButton>
          <ReasonButton
            variant="light"
            color="orange"
            leftSection={<IconWreckingBall size={16} />}
            reason={destroyBlocked(ref)}
            loading={working === "destroy"}
            onClick={() => setConfirmDestroy(true)}
          >
            Destroy
          </ReasonButton>
          <ReasonButton
            variant="default"
            leftSection={<IconShare size={16} />}
            reason={readOnly ? "Only the instance's own project manages its sharing." : null}
            onClick={() => setSharing(true)}
          >
            Manage Sharing
          </ReasonButton>
          <ReasonButton variant="light" color="red" leftSection={<IconTrash size={16} />} reason={deleteBlocked(ref)} onClick={() => setDeleting(ref)}>
            Delete
          </ReasonButton>
        </Group>
      </Group>

      {readOnly && (
        <Alert color="gray" icon={<IconEye size={18} />} title="Shared with this project">
          Project “{instance.project.displayName || instance.project.name}” shares this instance with you read-only.
        </Alert>
      )}
      {instance.outdated && (
        <Alert color="yellow" icon={<IconRefreshAlert size={18} />} title="The compute profile changed" data-testid="outdated-notice">
          Profile “{instance.profile?.displayName ?? instance.profileName}” was changed after this instance was launched. The instance keeps
          the configuration it was launched with (its snapshot of the profile); launch a new instance to get the profile as it is now.
        </Alert>
      )}

      <Grid gap="md">
        <Grid.Col span={{ base: 12, md: 7 }} order={{ base: 2, md: 1 }}>
          <Stack gap="md">
            <Section title="Details">
              <DataList orientation="horizontal" labelWidth="140px" withDivider>
                <DataList.Item>
                  <DataList.ItemLabel>Compute profile</DataList.ItemLabel>
                  <DataList.ItemValue>
                    {instance.profile ? (
                      <Anchor component={Link} to={`${base}/catalog/${instance.profile.id}`} size="sm">
                        {instance.profile.displayName}
                      </Anchor>
                    ) : (
                      <Text size="sm">{instance.profileName} (no longer available)</Text>
                    )}
                  </DataList.ItemValue>
                </DataList.Item>
                <DataList.Item>
                  <DataList.ItemLabel>Environment template</DataList.ItemLabel>
                  <DataList.ItemValue>
                    {instance.templateName} {instance.templateVersion}
                  </DataList.ItemValue>
                </DataList.Item>
                <DataList.Item>
                  <DataList.ItemLabel>Cluster</DataList.ItemLabel>
                  <DataList.ItemValue>
                    {instance.cluster ? (
                      <Group gap={6}>
                        <Text size="sm">{instance.cluster.displayName || instance.cluster.name}</Text>
                        <Badge size="xs" variant="light" color={instance.cluster.status === "READY" ? "green" : instance.cluster.status === "UNREACHABLE" ? "red" : "gray"}>
                          {statusLabel(instance.cluster.status)}
                        </Badge>
                      </Group>
                    ) : (
                      "—"
                    )}
                  </DataList.ItemValue>
                </DataList.Item>
                <DataList.Item>
                  <DataList.ItemLabel>Allocation</DataList.ItemLabel>
                  <DataList.ItemValue>
                    <AllocationBadge allocation={instance.allocationType} />
                  </DataList.ItemValue>
                </DataList.Item>
                <DataList.Item>
                  <DataList.ItemLabel>Sharing</DataList.ItemLabel>
                  <DataList.ItemValue>
                    <SharingBadge sharing={instance.sharing} />
                  </DataList.ItemValue>
                </DataList.Item>
                <DataList.Item>
                  <DataList.ItemLabel>Created</DataList.ItemLabel>
                  <DataList.ItemValue>{when(instance.createdAt)}</DataList.ItemValue>
                </DataList.Item>
                <DataList.Item>
                  <DataList.ItemLabel>Updated</DataList.ItemLabel>
                  <DataList.ItemValue>{when(instance.updatedAt)}</DataList.ItemValue>
                </DataList.Item>
              </DataList>
            </Section>
            <Section title="Resources">
              <ResourceGrid resources={instance.resources} />
            </Section>
          </Stack>
        </Grid.Col>
        <Grid.Col span={{ base: 12, md: 5 }} order={{ base: 1, md: 2 }}>
          <Stack gap="md">
            <Section title="Status updates" action={<LiveBadge />}>
              {history.length === 0 ? (
                <Group gap="xs">
                  <StatusBadge status={status} />
                  <Text size="sm" c="dimmed">
                    Changes show here as they happen.
                  </Text>
                </Group>
              ) : (
                <Timeline active={history.length - 1} bulletSize={14} lineWidth={2} aria-label="Status updates">
                  {history.map((entry, index) => (
                    <Timeline.Item key={`${entry.at}-${index}`} title={statusLabel(entry.status)} color={entry.status === "FAILED" ? "red" : undefined}>
                      {entry.message && (
                        <Text size="xs" c="dimmed">
                          {entry.message}
                        </Text>
                      )}
                      <Text size="xs" c="dimmed">
                        {when(entry.at)}
                      </Text>
                    </Timeline.Item>
                  ))}
                </Timeline>
              )}
            </Section>
            <Section title="Outputs">
              <Pairs pairs={instance.outputs} label="Outputs" copy empty={status === "SUCCESS" ? "The template declares no visible output." : "Outputs appear once the instance is deployed."} />
            </Section>
          </Stack>
        </Grid.Col>
      </Grid>

      <SimpleGrid cols={{ base: 1, lg: 3 }} spacing="md">
        <Section title="Inputs">
          <Pairs pairs={instance.inputs} label="Inputs" empty="No inputs." />
        </Section>
        <Section title="Labels">
          <Pairs pairs={instance.labels} label="Labels" empty="No labels." />
        </Section>
        <Section title="Annotations">
          <Pairs pairs={instance.annotations} label="Annotations" empty="No annotations." />
        </Section>
      </SimpleGrid>

      <Services instance={instance} project={project} status={status} readOnly={readOnly} />

      <Section title="Runs" action={<Text size="xs" c="dimmed">Newest first</Text>}>
        <Runs runs={instance.runs} />
      </Section>

      <DestroyInstanceModal
        instance={confirmDestroy ? ref : null}
        busy={working === "destroy"}
        onClose={() => setConfirmDestroy(false)}
        onConfirm={destroy}
      />
      <DeleteInstanceModal
        instance={deleting}
        onClose={() => setDeleting(null)}
        onDeleted={() => {
          setDeleting(null);
          navigate(`${base}/instances`);
        }}
      />
      <SharingModal
        kind="instance"
        target={sharing ? { id: instance.id, name: instance.name, displayName: instance.displayName, project: instance.project.name, sharing: instance.sharing } : null}
        onClose={() => setSharing(false)}
        onSaved={reload}
      />
    </Stack>
  );
}

/** "Live" while the status websocket is up; "Reconnecting" while it is lost. */
function LiveBadge() {
  const state = useConnection();
  return state === "lost" ? (
    <Badge variant="dot" color="orange" size="sm">
      Reconnecting
    </Badge>
  ) : (
    <Badge variant="dot" color="green" size="sm">
      Live
    </Badge>
  );
}
