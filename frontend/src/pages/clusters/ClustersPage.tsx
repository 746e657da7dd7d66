import { ActionIcon, Anchor, Badge, Button, Code, Group, Menu, Stack, Table, Text, Title, Tooltip, VisuallyHidden } from "@mantine/core";
import { IconDots, IconEye, IconPencil, IconPlus, IconRefresh, IconTrash } from "@tabler/icons-react";
import { Link } from "react-router-dom";
import { useQuery } from "urql";

import { useProject } from "../../app/project";
import { describeError } from "../../components/errors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import { ClustersListDocument } from "./queries";
import { ClusterStatusBadge, DEFAULT_DELETE_REASON, DriverBadge, gpuSummary, useClusterActions } from "./common";

export function ClustersPage() {
  const { project } = useProject();
  const [{ data, error }, refetch] = useQuery({ query: ClustersListDocument, requestPolicy: "cache-and-network" });
  const reload = () => refetch({ requestPolicy: "network-only" });
  const actions = useClusterActions(reload, reload);
  const base = `/p/${project}/studio/clusters`;

  return (
    <Stack>
      <Group justify="space-between" align="flex-end">
        <Stack gap={2}>
          <Title order={2}>Clusters</Title>
          <Text c="dimmed" size="sm">
            Where compute instances and services run. Profiles without a cluster use the default one.
          </Text>
        </Stack>
        <Button component={Link} to={`${base}/new`} leftSection={<IconPlus size={16} />}>
          Add Cluster
        </Button>
      </Group>
      {error && !data ? (
        <ErrorState message={describeError(error) ?? "Could not load the clusters."} onRetry={reload} />
      ) : !data ? (
        <Loading label="Loading clusters" />
      ) : data.clusters.length === 0 ? (
        <EmptyState
          title="No clusters yet"
          action={
            <Button component={Link} to={`${base}/new`} leftSection={<IconPlus size={16} />}>
              Add Cluster
            </Button>
          }
        >
          Register a Kubernetes cluster with its kubeconfig, or a simulated one for trials.
        </EmptyState>
      ) : (
        <Table.ScrollContainer minWidth={900}>
          <Table verticalSpacing="sm" highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Driver</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Access address</Table.Th>
                <Table.Th>Nodes</Table.Th>
                <Table.Th>Last checked</Table.Th>
                <Table.Th>
                  <VisuallyHidden>Actions</VisuallyHidden>
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {data.clusters.map((cluster) => (
                <Table.Tr key={cluster.id} data-testid={`cluster-${cluster.name}`}>
                  <Table.Td>
                    <Group gap={6} wrap="nowrap">
                      <Anchor component={Link} to={`${base}/${cluster.id}`} fw={500}>
                        {cluster.displayName}
                      </Anchor>
                      {cluster.isDefault && (
                        <Badge size="sm" color="blue" variant="filled">
                          Default
                        </Badge>
                      )}
                    </Group>
                    <Text size="xs" c="dimmed" ff="monospace">
                      {cluster.name}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <DriverBadge driver={cluster.driver} />
                  </Table.Td>
                  <Table.Td>
                    {cluster.statusMessage ? (
                      <Tooltip label={cluster.statusMessage} multiline maw={320} withArrow>
                        <span>
                          <ClusterStatusBadge status={cluster.status} />
                        </span>
                      </Tooltip>
                    ) : (
                      <ClusterStatusBadge status={cluster.status} />
                    )}
                  </Table.Td>
                  <Table.Td>
                    {cluster.accessAddress ? (
                      <Code>{cluster.accessAddress}</Code>
                    ) : (
                      <Text size="xs" c="orange">
                        None: services get no Connect links
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm">{cluster.nodes.length}</Text>
                    <Text size="xs" c="dimmed">
                      {gpuSummary(cluster)}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm">{cluster.checkedAt ? new Date(cluster.checkedAt).toLocaleString() : "Never"}</Text>
                  </Table.Td>
                  <Table.Td>
                    <Menu position="bottom-end" withinPortal>
                      <Menu.Target>
                        <ActionIcon
                          variant="subtle"
                          color="gray"
                          aria-label={`Actions for ${cluster.name}`}
                          loading={actions.checking === cluster.id}
                        >
                          <IconDots size={16} />
                        </ActionIcon>
                      </Menu.Target>
                      <Menu.Dropdown>
                        <Menu.Item component={Link} to={`${base}/${cluster.id}`} leftSection={<IconEye size={14} />}>
                          View details
                        </Menu.Item>
                        <Menu.Item component={Link} to={`${base}/${cluster.id}/edit`} leftSection={<IconPencil size={14} />}>
                          Edit Configuration
                        </Menu.Item>
                        <Menu.Item leftSection={<IconRefresh size={14} />} onClick={() => void actions.runCheck(cluster)}>
                          Check
                        </Menu.Item>
                        <Menu.Divider />
                        <Menu.Item
                          color="red"
                          leftSection={<IconTrash size={14} />}
                          disabled={cluster.isDefault}
                          onClick={() => actions.askDelete(cluster)}
                        >
                          Delete
                          {cluster.isDefault && (
                            <Text size="xs" c="dimmed" maw={220}>
                              {DEFAULT_DELETE_REASON}
                            </Text>
                          )}
                        </Menu.Item>
                      </Menu.Dropdown>
                    </Menu>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {actions.modal}
    </Stack>
  );
}
