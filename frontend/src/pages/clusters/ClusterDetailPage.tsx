import {
  Alert,
  Anchor,
  Badge,
  Breadcrumbs,
  Button,
  Code,
  Group,
  Paper,
  SimpleGrid,
  Stack,
  Table,
  Text,
  Title,
  Tooltip,
} from "@mantine/core";
import { IconAlertTriangle, IconCircleCheck, IconPencil, IconRefresh, IconTrash } from "@tabler/icons-react";
import type { ReactNode } from "react";
import { Link, useNavigate, useParams } from "react-router-dom";
import { useQuery } from "urql";

import { useProject } from "../../app/project";
import { describeError } from "../../components/errors";
import { ErrorState, Loading } from "../../components/states";
import { CapacityCard } from "../quotas/CapacityCard";
import { ClusterDetailDocument } from "./queries";
import { ClusterStatusBadge, DEFAULT_DELETE_REASON, DriverBadge, gpuSummary, useClusterActions } from "./common";

function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <Stack gap={2}>
      <Text size="xs" c="dimmed" fw={500}>
        {label}
      </Text>
      <div>{children}</div>
    </Stack>
  );
}

export function ClusterDetailPage() {
  const { id = "" } = useParams();
  const { project } = useProject();
  const navigate = useNavigate();
  const base = `/p/${project}/studio/clusters`;
  const [{ data, error }, refetch] = useQuery({ query: ClusterDetailDocument, variables: { id }, requestPolicy: "cache-and-network" });
  const reload = () => refetch({ requestPolicy: "network-only" });
  const actions = useClusterActions(reload, () => navigate(base));

  if (error && !data) return <ErrorState message={describeError(error) ?? "Could not load the cluster."} onRetry={reload} />;
  if (!data) return <Loading label="Loading the cluster" />;
  const cluster = data.cluster;
  if (!cluster) return <ErrorState message="No such cluster: it may have been deleted." />;
  const reachable = cluster.status === "READY";

  return (
    <Stack>
      <Breadcrumbs>
        <Anchor component={Link} to={base}>
          Clusters
        </Anchor>
        <Text>{cluster.name}</Text>
      </Breadcrumbs>
      <Group justify="space-between" align="flex-start">
        <Stack gap={4}>
          <Group gap="sm">
            <Title order={2}>{cluster.displayName}</Title>
            <ClusterStatusBadge status={cluster.status} />
            {cluster.isDefault && <Badge color="blue">Default</Badge>}
          </Group>
          <Text size="sm" c="dimmed" ff="monospace">
            {cluster.name}
          </Text>
        </Stack>
        <Group gap="xs">
          <Button
            variant="light"
            leftSection={<IconRefresh size={16} />}
            loading={actions.checking === cluster.id}
            onClick={() => void actions.runCheck(cluster)}
          >
            Check
          </Button>
          <Button component={Link} to={`${base}/${cluster.id}/edit`} variant="default" leftSection={<IconPencil size={16} />}>
            Edit Configuration
          </Button>
          <Tooltip label={DEFAULT_DELETE_REASON} disabled={!cluster.isDefault} multiline maw={260} withArrow>
            <Button
              variant="subtle"
              color="red"
              leftSection={<IconTrash size={16} />}
              data-disabled={cluster.isDefault || undefined}
              aria-disabled={cluster.isDefault || undefined}
              onClick={() => !cluster.isDefault && actions.askDelete(cluster)}
            >
              Delete
            </Button>
          </Tooltip>
        </Group>
      </Group>
      <Alert
        color={reachable ? "green" : cluster.status === "UNKNOWN" ? "gray" : "red"}
        icon={reachable ? <IconCircleCheck size={18} /> : <IconAlertTriangle size={18} />}
        title={reachable ? "Reachable" : cluster.status === "UNKNOWN" ? "Not checked yet" : "Unreachable"}
        role="status"
      >
        <Stack gap={2}>
          {cluster.serverVersion && <Text size="sm">Server version {cluster.serverVersion}</Text>}
          {cluster.statusMessage && <Text size="sm">{cluster.statusMessage}</Text>}
          <Text size="xs" c="dimmed">
            {cluster.checkedAt ? `Checked ${new Date(cluster.checkedAt).toLocaleString()}` : "Never checked"}
          </Text>
        </Stack>
      </Alert>
      <Paper withBorder p="md" radius="md">
        <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }}>
          <Field label="Driver">
            <DriverBadge driver={cluster.driver} />
          </Field>
          <Field label="Access address">
            {cluster.accessAddress ? (
              <Code>{cluster.accessAddress}</Code>
            ) : (
              <Text size="sm" c="orange">
                None: services on this cluster get no Connect links
              </Text>
            )}
          </Field>
          <Field label="Connection">
            <Text size="sm">
              {cluster.driver === "SIMULATED"
                ? "Simulated: nothing to connect to"
                : cluster.inCluster
                  ? "In-cluster (the server's service account)"
                  : cluster.hasKubeconfig
                    ? "Kubeconfig stored (encrypted; never shown)"
                    : "No kubeconfig"}
            </Text>
          </Field>
          <Field label="GPU resource names">
            {cluster.gpuResourceNames.length ? (
              <Stack gap={2}>
                {cluster.gpuResourceNames.map((r) => (
                  <Text key={r.vendor} size="sm">
                    {r.vendor}: <Code>{r.resourceName}</Code>
                  </Text>
                ))}
              </Stack>
            ) : (
              <Text size="sm" c="dimmed">
                The defaults
              </Text>
            )}
          </Field>
          <Field label="GPUs">
            <Text size="sm">{gpuSummary(cluster)}</Text>
          </Field>
          <Field label="GPU resources the nodes advertise">
            {cluster.gpuResources.length ? (
              <Stack gap={2} data-testid="gpu-resources">
                {cluster.gpuResources.map((r) => (
                  <Text key={`${r.resourceName}/${r.gpuModel ?? ""}`} size="sm">
                    <Code>{r.resourceName}</Code> {r.partition ? "(partition) " : ""}× {r.count}
                    {r.gpuModel ? ` on ${r.gpuModel}` : ""}
                  </Text>
                ))}
              </Stack>
            ) : (
              <Text size="sm" c="dimmed">
                None at its last check
              </Text>
            )}
          </Field>
          <Field label="Created">
            <Text size="sm">{new Date(cluster.createdAt).toLocaleString()}</Text>
          </Field>
        </SimpleGrid>
      </Paper>
      <Paper withBorder p="md" radius="md">
        <Stack gap="sm">
          <Title order={4}>Nodes</Title>
          {cluster.nodes.length === 0 ? (
            <Text size="sm" c="dimmed">
              {reachable ? "The last check found no nodes." : "No nodes known: check the cluster once it is reachable."}
            </Text>
          ) : (
            <Table.ScrollContainer minWidth={640}>
              <Table>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Node</Table.Th>
                    <Table.Th>CPU</Table.Th>
                    <Table.Th>Memory</Table.Th>
                    <Table.Th>GPUs</Table.Th>
                    <Table.Th>GPU model</Table.Th>
                    <Table.Th>GPU resource</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {cluster.nodes.map((node) => (
                    <Table.Tr key={node.name}>
                      <Table.Td ff="monospace">{node.name}</Table.Td>
                      <Table.Td>{node.cpu ?? "—"}</Table.Td>
                      <Table.Td>{node.memory ?? "—"}</Table.Td>
                      <Table.Td>{node.gpuCount}</Table.Td>
                      <Table.Td>{node.gpuModel ?? "—"}</Table.Td>
                      <Table.Td>{node.gpuResource ? <Code>{node.gpuResource}</Code> : "—"}</Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
          )}
        </Stack>
      </Paper>
      <CapacityCard cluster={id} linkProject={project} />
      {actions.modal}
    </Stack>
  );
}
