import { Anchor, Badge, Button, Card, Grid, Group, Paper, SimpleGrid, Stack, Table, Text, ThemeIcon, Title, UnstyledButton } from "@mantine/core";
import { IconApps, IconArrowRight, IconCpu, IconLayoutGrid } from "@tabler/icons-react";
import { useEffect, useRef, type ReactNode } from "react";
import { Link } from "react-router-dom";
import { useQuery } from "urql";

import { useAuth } from "../../app/auth";
import { useProject } from "../../app/project";
import { describeError } from "../../components/errors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import { StatusBadge, statusLabel } from "../../components/StatusBadge";
import { graphql } from "../../gql";
import type { DashboardOverviewQuery, DeploymentStatus } from "../../gql/graphql";
import { currentStatus, useInstanceEvents, type LiveState } from "../instances/live";
import { CapacityCard } from "../quotas/CapacityCard";
import { QuotaCard } from "../quotas/QuotaCard";

export const DashboardOverviewDocument = graphql(`
  query DashboardOverview($project: String!) {
    notDeployed: computeInstances(project: $project, status: [NOT_DEPLOYED], first: 0) {
      totalCount
    }
    waiting: computeInstances(project: $project, status: [WAITING], first: 0) {
      totalCount
    }
    inProgress: computeInstances(project: $project, status: [IN_PROGRESS], first: 0) {
      totalCount
    }
    success: computeInstances(project: $project, status: [SUCCESS], first: 0) {
      totalCount
    }
    failed: computeInstances(project: $project, status: [FAILED], first: 0) {
      totalCount
    }
    destroying: computeInstances(project: $project, status: [DESTROYING], first: 0) {
      totalCount
    }
    recent: computeInstances(project: $project, first: 100) {
      totalCount
      edges {
        node {
          id
          name
          displayName
          status
          statusMessage
          profileName
          createdAt
          updatedAt
          project {
            id
            name
          }
        }
      }
    }
    catalog(project: $project) {
      id
    }
  }
`);

const STATUSES: DeploymentStatus[] = ["NOT_DEPLOYED", "WAITING", "IN_PROGRESS", "SUCCESS", "FAILED", "DESTROYING"];
const RECENT_SHOWN = 8;

function time(value: string): number {
  const parsed = Date.parse(value);
  return Number.isNaN(parsed) ? 0 : parsed;
}

/** The counts per status: the server's, moved along by the live events about instances it listed. */
export function liveCounts(data: DashboardOverviewQuery, live: LiveState): Record<DeploymentStatus, number> {
  const counts: Record<DeploymentStatus, number> = {
    NOT_DEPLOYED: data.notDeployed.totalCount,
    WAITING: data.waiting.totalCount,
    IN_PROGRESS: data.inProgress.totalCount,
    SUCCESS: data.success.totalCount,
    FAILED: data.failed.totalCount,
    DESTROYING: data.destroying.totalCount,
  };
  const byId = new Map(data.recent.edges.map((edge) => [edge.node.id, edge.node]));
  for (const event of Object.values(live.byId)) {
    const node = byId.get(event.id);
    if (!node || event.status === node.status || time(event.at) < time(node.updatedAt)) continue;
    const to = event.status as DeploymentStatus;
    if (!(to in counts)) continue;
    counts[node.status] = Math.max(0, counts[node.status] - 1);
    counts[to] += 1;
  }
  return counts;
}

function StatCard({ status, count, to }: { status: DeploymentStatus; count: number; to: string }) {
  return (
    <UnstyledButton component={Link} to={to} aria-label={`${statusLabel(status)}: ${count}`} data-testid={`count-${status}`}>
      <Paper withBorder p="md" radius="md" h="100%">
        <Stack gap={6}>
          <StatusBadge status={status} />
          <Text fz={28} fw={700} lh={1}>
            {count}
          </Text>
        </Stack>
      </Paper>
    </UnstyledButton>
  );
}

function QuickLink({ to, icon, title, text }: { to: string; icon: ReactNode; title: string; text: string }) {
  return (
    <UnstyledButton component={Link} to={to} aria-label={title}>
      <Group wrap="nowrap" gap="sm" p="xs">
        <ThemeIcon variant="light" size="lg" aria-hidden>
          {icon}
        </ThemeIcon>
        <Stack gap={0} style={{ flex: 1, minWidth: 0 }}>
          <Text fw={500} size="sm">
            {title}
          </Text>
          <Text size="xs" c="dimmed">
            {text}
          </Text>
        </Stack>
        <IconArrowRight size={16} aria-hidden />
      </Group>
    </UnstyledButton>
  );
}

/** The project at a glance: its instances by status (live), the catalog, and what just changed. */
export function DashboardPage() {
  const { project } = useProject();
  const { projects } = useAuth();
  const base = `/p/${project}`;
  const [{ data, error }, refetch] = useQuery({ query: DashboardOverviewDocument, variables: { project }, requestPolicy: "cache-and-network" });
  const live = useInstanceEvents(project);

  // An event about an instance the counts do not know (a new one, or one newly shared): ask again.
  const handled = useRef(new Set<string>());
  const lastEvent = live.feed[0];
  useEffect(() => {
    if (!data || !lastEvent) return;
    const key = `${lastEvent.id}@${lastEvent.at}`;
    if (handled.current.has(key) || data.recent.edges.some((edge) => edge.node.id === lastEvent.id)) return;
    handled.current.add(key);
    const timer = window.setTimeout(() => refetch({ requestPolicy: "network-only" }), 500);
    return () => window.clearTimeout(timer);
  }, [data, lastEvent, refetch]);

  // Events were missed (the socket was down longer than the server keeps them): the snapshot that
  // came instead has the instances there are now, not those removed meanwhile, nor the counts.
  const missed = live.missed;
  const askedFor = useRef<string | null>(null);
  useEffect(() => {
    if (missed === null || askedFor.current === missed) return;
    askedFor.current = missed;
    refetch({ requestPolicy: "network-only" });
  }, [missed, refetch]);

  // Removed instances send no event: while some are being destroyed (perhaps deleted), look again now and then.
  const destroying = data ? liveCounts(data, live).DESTROYING : 0;
  useEffect(() => {
    if (destroying === 0) return;
    const timer = window.setInterval(() => refetch({ requestPolicy: "network-only" }), 5000);
    return () => window.clearInterval(timer);
  }, [destroying, refetch]);

  if (error && !data) {
    return <ErrorState message={describeError(error) ?? "The dashboard could not be loaded."} onRetry={() => refetch({ requestPolicy: "network-only" })} />;
  }
  if (!data) return <Loading label="Loading the dashboard" />;

  const projectName = projects.find((p) => p.name === project)?.displayName || project;
  const counts = liveCounts(data, live);
  const total = data.recent.totalCount;
  const skus = data.catalog.length;
  const recent = data.recent.edges.slice(0, RECENT_SHOWN).map((edge) => edge.node);

  const catalogCard = (
    <Card withBorder padding="lg">
      <Stack gap="xs">
        <Group justify="space-between">
          <Title order={4}>Catalog</Title>
          <Badge variant="light" size="lg" data-testid="sku-count">
            {skus} SKU{skus === 1 ? "" : "s"}
          </Badge>
        </Group>
        <Text size="sm" c="dimmed">
          {skus === 0 ? "No SKU is published to this project yet: ask a project admin to add a compute profile." : "Compute SKUs this project may launch."}
        </Text>
        <Group>
          <Button variant="light" component={Link} to={`${base}/catalog`} rightSection={<IconArrowRight size={14} />}>
            Browse the catalog
          </Button>
        </Group>
      </Stack>
    </Card>
  );

  const quickLinks = (
    <Card withBorder padding="md">
      <Title order={4} mb="xs">
        Quick links
      </Title>
      <Stack gap={0}>
        <QuickLink to={`${base}/catalog`} icon={<IconLayoutGrid size={18} />} title="Catalog" text="Launch a compute instance from a SKU" />
        <QuickLink to={`${base}/instances`} icon={<IconCpu size={18} />} title="Compute Instances" text="Deploy, destroy and share instances" />
        <QuickLink to={`${base}/services`} icon={<IconApps size={18} />} title="Service Instances" text="GPU services running in your instances" />
      </Stack>
    </Card>
  );

  if (total === 0) {
    return (
      <Stack gap="md">
        <Title order={2}>{projectName}</Title>
        <Card withBorder padding="lg">
          <EmptyState
            title="No compute instances yet"
            action={
              <Button component={Link} to={`${base}/catalog`} leftSection={<IconLayoutGrid size={16} />}>
                Browse the catalog
              </Button>
            }
          >
            Pick a SKU from the catalog and launch a compute instance: its status shows here live as it deploys.
          </EmptyState>
        </Card>
        <SimpleGrid cols={{ base: 1, md: 2 }} spacing="md">
          {catalogCard}
          {quickLinks}
          <QuotaCard />
          <CapacityCard project={project} linkProject={project} />
        </SimpleGrid>
      </Stack>
    );
  }

  return (
    <Stack gap="md">
      <Group justify="space-between" align="flex-end" wrap="wrap">
        <Stack gap={2}>
          <Title order={2}>{projectName}</Title>
          <Text size="sm" c="dimmed">
            {total} compute instance{total === 1 ? "" : "s"} · statuses update live
          </Text>
        </Stack>
        <Button component={Link} to={`${base}/catalog`} leftSection={<IconLayoutGrid size={16} />}>
          New Compute Instance
        </Button>
      </Group>

      <SimpleGrid cols={{ base: 2, sm: 3, lg: 6 }} spacing="sm" aria-label="Instances by status">
        {STATUSES.map((status) => (
          <StatCard key={status} status={status} count={counts[status]} to={`${base}/instances?status=${status}`} />
        ))}
      </SimpleGrid>

      <Grid gap="md">
        <Grid.Col span={{ base: 12, lg: 8 }}>
          <Stack gap="md">
            <Card withBorder padding="lg" component="section" aria-label="Recent compute instances">
              <Group justify="space-between" mb="sm">
                <Title order={4}>Compute instances</Title>
                <Anchor component={Link} to={`${base}/instances`} size="sm">
                  View all {total}
                </Anchor>
              </Group>
              <Table.ScrollContainer minWidth={520}>
                <Table verticalSpacing="xs" aria-label="Recent compute instances">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Name</Table.Th>
                      <Table.Th>Status</Table.Th>
                      <Table.Th>Profile</Table.Th>
                      <Table.Th>Created</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {recent.map((node) => {
                      const { status } = currentStatus(node, live);
                      return (
                        <Table.Tr key={node.id} data-testid={`recent-${node.name}`}>
                          <Table.Td>
                            <Anchor component={Link} to={`${base}/instances/${node.id}`} size="sm" fw={500}>
                              {node.displayName}
                            </Anchor>
                          </Table.Td>
                          <Table.Td>
                            <StatusBadge status={status} />
                          </Table.Td>
                          <Table.Td>
                            <Text size="sm">{node.profileName}</Text>
                          </Table.Td>
                          <Table.Td>
                            <Text size="sm">{new Date(node.createdAt).toLocaleString()}</Text>
                          </Table.Td>
                        </Table.Tr>
                      );
                    })}
                  </Table.Tbody>
                </Table>
              </Table.ScrollContainer>
            </Card>
            {catalogCard}
            <CapacityCard project={project} linkProject={project} />
          </Stack>
        </Grid.Col>
        <Grid.Col span={{ base: 12, lg: 4 }}>
          <Stack gap="md">
            <QuotaCard />
            <Card withBorder padding="lg" component="section" aria-label="Recent changes">
              <Group justify="space-between" mb="sm">
                <Title order={4}>Recent changes</Title>
                <Badge variant="dot" color="green" size="sm">
                  Live
                </Badge>
              </Group>
              {live.feed.length === 0 ? (
                <Text size="sm" c="dimmed">
                  Nothing changed since you opened this page. Status changes of the project's instances show here as they happen.
                </Text>
              ) : (
                <Stack gap="sm" component="ol" style={{ listStyle: "none", padding: 0, margin: 0 }}>
                  {live.feed.map((event, index) => (
                    <li key={`${event.id}-${event.at}-${index}`}>
                      <Group gap="xs" wrap="nowrap" align="flex-start" justify="space-between">
                        <Stack gap={0} style={{ minWidth: 0 }}>
                          <Anchor component={Link} to={`${base}/instances/${event.id}`} size="sm" fw={500} truncate>
                            {event.displayName}
                          </Anchor>
                          {event.message && (
                            <Text size="xs" c="dimmed" lineClamp={2}>
                              {event.message}
                            </Text>
                          )}
                          <Text size="xs" c="dimmed">
                            {new Date(event.at).toLocaleString()}
                          </Text>
                        </Stack>
                        <StatusBadge status={event.status} />
                      </Group>
                    </li>
                  ))}
                </Stack>
              )}
            </Card>
            {quickLinks}
          </Stack>
        </Grid.Col>
      </Grid>
    </Stack>
  );
}
