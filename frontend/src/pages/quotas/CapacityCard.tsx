import { Anchor, Card, Stack, Table, Text, Title } from "@mantine/core";
import { Link } from "react-router-dom";
import { useQuery } from "urql";

import { describeError } from "../../components/errors";
import { GpuCapacityDocument } from "./queries";

/** GPUs per model of clusters: capacity, allocated, free and who holds them (as far as the caller may see).
 * `project`: the clusters that project uses; `cluster`: that one only (platform admins). */
export function CapacityCard({ project, cluster, linkProject }: { project?: string; cluster?: string; linkProject?: string }) {
  const [{ data, error }] = useQuery({
    query: GpuCapacityDocument,
    variables: { project: project ?? null, cluster: cluster ?? null },
    requestPolicy: "cache-and-network",
  });
  const clusters = data?.gpuCapacity ?? [];
  return (
    <Card withBorder padding="lg" component="section" aria-label="GPU capacity">
      <Title order={4} mb="sm">
        GPU capacity
      </Title>
      {error && !data && <Text c="red">{describeError(error)}</Text>}
      {data && clusters.every((c) => c.models.length === 0) && (
        <Text size="sm" c="dimmed">
          No GPUs known on {cluster ? "this cluster" : "these clusters"}: a cluster's check finds its nodes' GPUs.
        </Text>
      )}
      <Stack gap="md">
        {clusters
          .filter((c) => c.models.length > 0)
          .map((c) => (
            <Table.ScrollContainer key={c.clusterId} minWidth={520}>
              <Table verticalSpacing="xs" aria-label={`GPUs of ${c.clusterName}`} data-testid={`capacity-${c.clusterName}`}>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>{cluster ? "GPU model" : `${c.displayName}: GPU model`}</Table.Th>
                    <Table.Th>Capacity</Table.Th>
                    <Table.Th>Allocated</Table.Th>
                    <Table.Th>Free</Table.Th>
                    <Table.Th>Held by</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {c.models.map((m) => (
                    <Table.Tr key={`${m.vendor}-${m.model ?? ""}`} data-testid={`capacity-${c.clusterName}-${m.vendor}-${m.model ?? "any"}`}>
                      <Table.Td>
                        <Text size="sm">
                          {m.vendor} {m.model ?? "(any model)"}
                        </Text>
                      </Table.Td>
                      <Table.Td>{m.capacity}</Table.Td>
                      <Table.Td>{m.allocated}</Table.Td>
                      <Table.Td>{m.free}</Table.Td>
                      <Table.Td>
                        <Stack gap={0}>
                          {m.holders.map((h) => (
                            <Text key={h.instanceId} size="xs">
                              {h.gpus} ×{" "}
                              {linkProject === h.project ? (
                                <Anchor component={Link} to={`/p/${h.project}/instances/${h.instanceId}`} size="xs">
                                  {h.instanceName}
                                </Anchor>
                              ) : (
                                h.instanceName
                              )}{" "}
                              ({h.project}
                              {h.owner ? `, ${h.owner}` : ""})
                            </Text>
                          ))}
                          {m.others > 0 && (
                            <Text size="xs" c="dimmed">
                              {m.others} held by others
                            </Text>
                          )}
                          {m.holders.length === 0 && m.others === 0 && (
                            <Text size="xs" c="dimmed">
                              nobody
                            </Text>
                          )}
                        </Stack>
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
          ))}
      </Stack>
    </Card>
  );
}
