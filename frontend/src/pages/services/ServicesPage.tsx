import { Anchor, Button, Group, Select, Stack, Table, Text, Title, Tooltip } from "@mantine/core";
import { IconChevronLeft, IconChevronRight, IconRocket } from "@tabler/icons-react";
import { useCallback, useEffect, useState } from "react";
import { Link, useSearchParams } from "react-router-dom";
import { useQuery } from "urql";

import { useProject } from "../../app/project";
import { describeError } from "../../components/errors";
import { MineAllControl, OwnerText, useMineFilter } from "../../components/Owner";
import { StatusBadge } from "../../components/StatusBadge";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import type { ServiceRowFieldsFragment, ServiceStatus } from "../../gql/graphql";
import { ConnectLinks, ServiceActions, useLiveService } from "./live";
import { ServicesComputeInstancesDocument, ServicesListDocument } from "./queries";
import { vendorLabel } from "../catalog/resources";

const PAGE_SIZE = 25;

/** "1 × NVIDIA H100 80GB": the GPUs the service holds, of its compute instance's model. */
function gpuText(count: number, resources: { gpuVendor: string; gpuModel?: string | null }, vendor: string | null | undefined): string {
  if (count === 0) return "None";
  if (!vendor || vendor === "CPU") return String(count);
  const model = vendor === resources.gpuVendor ? resources.gpuModel : null;
  return `${count} × ${[vendorLabel(vendor), model].filter(Boolean).join(" ")}`;
}

function ServiceRow({
  service,
  onChanged,
  onStatus,
}: {
  service: ServiceRowFieldsFragment;
  onChanged: () => void;
  onStatus: (id: string, status: ServiceStatus) => void;
}) {
  const { project } = useProject();
  const live = useLiveService(service.id, service);
  useEffect(() => onStatus(service.id, live.status), [service.id, live.status, onStatus]);
  const instance = service.computeInstance;
  return (
    <Table.Tr data-testid={`service-${service.name}`}>
      <Table.Td>
        <Anchor component={Link} to={`/p/${project}/services/${service.id}`} fw={500}>
          {service.displayName}
        </Anchor>
        {service.displayName !== service.name && (
          <Text size="xs" c="dimmed" ff="monospace">
            {service.name}
          </Text>
        )}
      </Table.Td>
      <Table.Td>
        <Text size="sm">{service.template?.displayName ?? service.templateName}</Text>
        {service.template?.displayName && service.template.displayName !== service.templateName && (
          <Text size="xs" c="dimmed" ff="monospace">
            {service.templateName}
          </Text>
        )}
      </Table.Td>
      <Table.Td>
        <OwnerText owner={service.owner} />
      </Table.Td>
      <Table.Td>
        <Anchor component={Link} to={`/p/${project}/instances/${instance.id}`} size="sm">
          {instance.displayName || instance.name}
        </Anchor>
      </Table.Td>
      <Table.Td>
        <Text size="sm">{gpuText(service.gpuCount, instance.resources, service.template?.vendor ?? instance.resources.gpuVendor)}</Text>
      </Table.Td>
      <Table.Td>
        {live.statusMessage ? (
          <Tooltip label={live.statusMessage} multiline maw={320} withArrow>
            <span>
              <StatusBadge status={live.status} />
            </span>
          </Tooltip>
        ) : (
          <StatusBadge status={live.status} />
        )}
      </Table.Td>
      <Table.Td>
        <ConnectLinks links={live.connect} status={live.status} />
      </Table.Td>
      <Table.Td>
        <ServiceActions service={service} actions={live.actions} variant="icons" onChanged={onChanged} onDeleted={onChanged} />
      </Table.Td>
    </Table.Tr>
  );
}

export function ServicesPage() {
  const { project } = useProject();
  const [params, setParams] = useSearchParams();
  const computeInstance = params.get("computeInstance");
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [mine, setMine] = useMineFilter(() => setCursors([null]));
  const after = cursors[cursors.length - 1];
  const [{ data, error }, refetch] = useQuery({
    query: ServicesListDocument,
    variables: { project, computeInstance, mine: mine || null, first: PAGE_SIZE, after },
    requestPolicy: "cache-and-network",
  });
  const [instances] = useQuery({ query: ServicesComputeInstancesDocument, variables: { project } });
  const reload = useCallback(() => refetch({ requestPolicy: "network-only" }), [refetch]);

  // Rows that are being deleted disappear once deleted: look again until none is left.
  const [statuses, setStatuses] = useState<Record<string, ServiceStatus>>({});
  const onStatus = useCallback(
    (id: string, status: ServiceStatus) => setStatuses((current) => (current[id] === status ? current : { ...current, [id]: status })),
    [],
  );
  const edges = data?.serviceInstances.edges ?? [];
  const anyDeleting = edges.some(({ node }) => statuses[node.id] === "DELETING");
  useEffect(() => {
    if (!anyDeleting) return;
    const timer = window.setInterval(reload, 4000);
    return () => window.clearInterval(timer);
  }, [anyDeleting, reload]);

  const ownInstances = (instances.data?.computeInstances.edges ?? [])
    .map((edge) => edge.node)
    .filter((node) => node.project.name === project);
  const filterName = ownInstances.find((i) => i.id === computeInstance);
  const launchLink = `/p/${project}/services/new${computeInstance ? `?computeInstance=${computeInstance}` : ""}`;

  const setFilter = (value: string | null) => {
    setCursors([null]);
    setParams(
      (current) => {
        const next = new URLSearchParams(current);
        if (value) next.set("computeInstance", value);
        else next.delete("computeInstance");
        return next;
      },
      { replace: true },
    );
  };

  const connection = data?.serviceInstances;
  return (
    <Stack>
      <Group justify="space-between" align="flex-end">
        <Stack gap={2}>
          <Title order={2}>Service Instances</Title>
          <Text c="dimmed" size="sm">
            GPU services (JupyterLab, vLLM, shells…) running in this project&apos;s compute instances.
          </Text>
        </Stack>
        <Button component={Link} to={launchLink} leftSection={<IconRocket size={16} />}>
          Launch service
        </Button>
      </Group>
      <Group align="flex-end" gap="sm" wrap="wrap">
        <MineAllControl mine={mine} onChange={setMine} what="service instances" />
        <Select
          label="Compute instance"
          placeholder="All compute instances"
          clearable
          searchable
          maw={360}
          value={computeInstance}
          onChange={setFilter}
          data={ownInstances.map((i) => ({ value: i.id, label: i.displayName || i.name }))}
          error={instances.error ? describeError(instances.error) : undefined}
          nothingFoundMessage="No compute instance"
        />
      </Group>
      {error && !data ? (
        <ErrorState message={describeError(error) ?? "Could not load the service instances."} onRetry={reload} />
      ) : !connection ? (
        <Loading label="Loading service instances" />
      ) : connection.edges.length === 0 && cursors.length === 1 ? (
        <EmptyState
          title={
            computeInstance
              ? "No service instances in this compute instance"
              : mine
                ? "You own no service instance here"
                : "No service instances yet"
          }
          action={
            <Button component={Link} to={launchLink} leftSection={<IconRocket size={16} />}>
              Launch service
            </Button>
          }
        >
          {computeInstance
            ? `"${filterName?.displayName ?? "This compute instance"}" runs no service yet.`
            : "Launch a service from an instance template (JupyterLab, vLLM, a shell…) in one of your deployed compute instances."}
        </EmptyState>
      ) : (
        <>
          <Table.ScrollContainer minWidth={1060}>
            <Table verticalSpacing="sm" highlightOnHover>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Name</Table.Th>
                  <Table.Th>Template</Table.Th>
                  <Table.Th>Owner</Table.Th>
                  <Table.Th>Compute instance</Table.Th>
                  <Table.Th>GPUs</Table.Th>
                  <Table.Th>Status</Table.Th>
                  <Table.Th>Connect</Table.Th>
                  <Table.Th>Actions</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {connection.edges.map(({ node }) => (
                  <ServiceRow key={node.id} service={node} onChanged={reload} onStatus={onStatus} />
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          <Group justify="space-between">
            <Text size="xs" c="dimmed">
              {connection.totalCount} service instance{connection.totalCount === 1 ? "" : "s"}
            </Text>
            {(cursors.length > 1 || connection.pageInfo.hasNextPage) && (
              <Group gap="xs">
                <Button
                  size="xs"
                  variant="default"
                  leftSection={<IconChevronLeft size={14} />}
                  disabled={cursors.length === 1}
                  onClick={() => setCursors((c) => c.slice(0, -1))}
                >
                  Previous
                </Button>
                <Button
                  size="xs"
                  variant="default"
                  rightSection={<IconChevronRight size={14} />}
                  disabled={!connection.pageInfo.hasNextPage}
                  onClick={() => setCursors((c) => [...c, connection.pageInfo.endCursor ?? null])}
                >
                  Next
                </Button>
              </Group>
            )}
          </Group>
        </>
      )}
    </Stack>
  );
}
