/* A deployed compute instance's namespace, as its cluster has it: what its services use of its
 * ResourceQuota (used of hard, per resource) and its volume claims (whose workspace each is, or
 * kept after its service was deleted: a new service may mount it as an existing claim). */
import { Alert, Anchor, Badge, Button, Code, Group, Progress, Stack, Table, Text } from "@mantine/core";
import { IconAlertTriangle, IconRefresh } from "@tabler/icons-react";
import { Link } from "react-router-dom";
import { useQuery } from "urql";

import { describeError } from "../../components/errors";
import { Panel } from "../../components/Section";
import { graphql } from "../../gql";

export const InstanceNamespaceUsageDocument = graphql(`
  query InstanceNamespaceUsage($id: ID!) {
    computeInstance(id: $id) {
      id
      services {
        id
        name
      }
      namespaceUsage {
        namespace
        problem
        quotas {
          name
          uses {
            resource
            hard
            used
          }
        }
        volumeClaims {
          name
          size
          storageClass
          phase
          serviceId
          keptFrom
          keep
        }
      }
    }
  }
`);

const UNITS: Record<string, number> = {
  "": 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
};

/** A Kubernetes quantity as a number ("500m" 0.5, "2Gi" 2147483648); null when it is not one. */
export function quantity(text: string): number | null {
  const match = /^([0-9.]+)(m|k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?$/.exec(text.trim());
  if (!match) return null;
  return Number(match[1]) * UNITS[match[2] ?? ""];
}

function share(used: string, hard: string): number | null {
  const u = quantity(used);
  const h = quantity(hard);
  if (u === null || h === null || h === 0) return null;
  return Math.min(100, (u / h) * 100);
}

export function NamespaceUsagePanel({ instanceId, base }: { instanceId: string; base: string }) {
  const [{ data, error, fetching }, refetch] = useQuery({
    query: InstanceNamespaceUsageDocument,
    variables: { id: instanceId },
    requestPolicy: "cache-and-network",
  });
  const usage = data?.computeInstance?.namespaceUsage;
  const services = new Map((data?.computeInstance?.services ?? []).map((s) => [s.id, s.name]));
  const action = (
    <Button size="xs" variant="subtle" leftSection={<IconRefresh size={14} />} loading={fetching} onClick={() => refetch({ requestPolicy: "network-only" })}>
      Refresh
    </Button>
  );
  if (error && !data) {
    return (
      <Panel title="Quota and volumes" action={action}>
        <Text size="sm" c="red">
          {describeError(error) ?? "Could not read the namespace's usage."}
        </Text>
      </Panel>
    );
  }
  if (!usage) {
    return (
      <Panel title="Quota and volumes" action={action}>
        <Text size="sm" c="dimmed">
          {data ? "Shown once the instance is deployed." : "Loading…"}
        </Text>
      </Panel>
    );
  }
  return (
    <Panel title="Quota and volumes" action={action}>
      <Stack gap="md">
        <Text size="xs" c="dimmed">
          Namespace <Code>{usage.namespace}</Code>, as its cluster has it now.
        </Text>
        {usage.problem && (
          <Alert color="yellow" icon={<IconAlertTriangle size={18} />}>
            {usage.problem}
          </Alert>
        )}
        {usage.quotas.map((quota) => (
          <Table key={quota.name} aria-label={`Quota ${quota.name}`} data-testid="quota-usage">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Quota “{quota.name}”</Table.Th>
                <Table.Th>Used</Table.Th>
                <Table.Th>Hard</Table.Th>
                <Table.Th w="30%" />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {quota.uses.map((use) => {
                const percent = share(use.used, use.hard);
                return (
                  <Table.Tr key={use.resource}>
                    <Table.Td>
                      <Code>{use.resource}</Code>
                    </Table.Td>
                    <Table.Td>{use.used}</Table.Td>
                    <Table.Td>{use.hard}</Table.Td>
                    <Table.Td>
                      {percent !== null && (
                        <Progress value={percent} color={percent >= 100 ? "red" : percent >= 80 ? "yellow" : "blue"} aria-label={`${use.resource} ${Math.round(percent)}% used`} />
                      )}
                    </Table.Td>
                  </Table.Tr>
                );
              })}
            </Table.Tbody>
          </Table>
        ))}
        {usage.quotas.length === 0 && !usage.problem && (
          <Text size="sm" c="dimmed">
            Its namespace has no ResourceQuota.
          </Text>
        )}
        {usage.volumeClaims.length === 0 ? (
          <Text size="sm" c="dimmed">
            No volume claims.
          </Text>
        ) : (
          <Table aria-label="Volume claims" data-testid="volume-claims">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Volume claim</Table.Th>
                <Table.Th>Size</Table.Th>
                <Table.Th>Phase</Table.Th>
                <Table.Th>Workspace of</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {usage.volumeClaims.map((claim) => (
                <Table.Tr key={claim.name}>
                  <Table.Td>
                    <Code>{claim.name}</Code>
                    {claim.storageClass && (
                      <Text size="xs" c="dimmed">
                        class {claim.storageClass}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>{claim.size ?? "—"}</Table.Td>
                  <Table.Td>{claim.phase ?? "—"}</Table.Td>
                  <Table.Td>
                    {claim.serviceId ? (
                      <Group gap={6}>
                        <Anchor component={Link} to={`${base}/services/${claim.serviceId}`} size="sm">
                          {services.get(claim.serviceId) ?? claim.serviceId}
                        </Anchor>
                        {claim.keep && (
                          <Badge size="xs" variant="light">
                            kept on delete
                          </Badge>
                        )}
                      </Group>
                    ) : (
                      <Text size="sm">
                        No service{claim.keptFrom ? `: kept from “${claim.keptFrom}”` : ""}; a new service may mount it as an existing claim
                      </Text>
                    )}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Stack>
    </Panel>
  );
}
