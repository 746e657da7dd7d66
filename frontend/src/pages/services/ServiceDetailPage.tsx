import {
  Alert,
  Anchor,
  Breadcrumbs,
  Code,
  Group,
  SimpleGrid,
  Stack,
  Table,
  Text,
  Title,
} from "@mantine/core";
import { IconAlertTriangle, IconInfoCircle } from "@tabler/icons-react";
import { useCallback, useEffect, type ReactNode } from "react";
import { Link, useNavigate, useParams } from "react-router-dom";
import { useQuery } from "urql";

import { useAuth } from "../../app/auth";
import { useProject } from "../../app/project";
import { AutoStopPanel } from "../../components/AutoStop";
import { ClusterEventsPanel } from "../../components/ClusterEvents";
import { describeError } from "../../components/errors";
import { OwnerText } from "../../components/Owner";
import { Section } from "../../components/Section";
import { StatusBadge } from "../../components/StatusBadge";
import { ErrorState, Loading } from "../../components/states";
import type { ServiceDetailQuery } from "../../gql/graphql";
import { VendorBadge, pullPolicyLabel } from "../instance-templates/spec";
import { storageSummary } from "../instance-templates/storage";
import { EditServiceButton } from "./EditServiceModal";
import { ConnectLinks, ServiceActions, useLiveService } from "./live";
import { LogsPanel } from "./LogsPanel";
import { ServiceDetailDocument } from "./queries";
import { SshPanel } from "./SshPanel";

type Service = NonNullable<ServiceDetailQuery["serviceInstance"]>;

function resourcesSummary(resources: Service["resources"]): string {
  const pair = (request: string | null, limit: string | null) =>
    request === null && limit === null ? null : request === limit || limit === null ? `${request}` : request === null ? `${limit}` : `${request} to ${limit}`;
  const cpu = pair(resources.cpuRequest, resources.cpuLimit);
  const memory = pair(resources.memoryRequest, resources.memoryLimit);
  if (cpu === null && memory === null) return "The GPUs' share of the compute instance";
  return [cpu !== null ? `${cpu} CPU` : null, memory !== null ? `${memory} of memory` : null].filter(Boolean).join(", ");
}

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

function ServiceView({ service, reload }: { service: Service; reload: () => void }) {
  const { project } = useProject();
  const { me } = useAuth();
  const navigate = useNavigate();
  const live = useLiveService(service.id, service);
  const instance = service.computeInstance;
  const failed = live.status === "FAILED";
  // Being deleted: look again until it is gone (then the page says so).
  const deleting = live.status === "DELETING";
  useEffect(() => {
    if (!deleting) return;
    const timer = window.setInterval(reload, 4000);
    return () => window.clearInterval(timer);
  }, [deleting, reload]);
  return (
    <Stack>
      <Breadcrumbs>
        <Anchor component={Link} to={`/p/${project}/services`}>
          Service Instances
        </Anchor>
        <Text>{service.name}</Text>
      </Breadcrumbs>
      <Group justify="space-between" align="flex-start">
        <Stack gap={4}>
          <Group gap="sm">
            <Title order={2}>{service.displayName}</Title>
            <StatusBadge status={live.status} />
          </Group>
          <Text size="sm" c="dimmed" ff="monospace">
            {service.name}
          </Text>
        </Stack>
        <Group gap="xs">
          <EditServiceButton service={service} status={live.status} onSaved={reload} />
          <ServiceActions
            service={service}
            actions={live.actions}
            variant="buttons"
            onChanged={reload}
            onDeleted={() => navigate(`/p/${project}/services`)}
          />
        </Group>
      </Group>
      {live.statusMessage && (
        <Alert
          color={failed ? "red" : "blue"}
          icon={failed ? <IconAlertTriangle size={18} /> : <IconInfoCircle size={18} />}
          title={failed ? "Failed" : "Status"}
          role="status"
        >
          {live.statusMessage}
        </Alert>
      )}
      <AutoStopPanel kind="service" id={service.id} status={live.status} />
      <Section title="Connect">
        <ConnectLinks
          links={live.connect}
          status={live.status}
          size="sm"
          empty={
            service.ports.length === 0
              ? "This service exposes no ports: there is nothing to open. Open a terminal in its container instead."
              : live.status === "RUNNING"
                ? "None of its ports is a web or ssh port, or its cluster has no access address: there is nothing to open."
                : "The links appear once the service is running."
          }
        />
        {service.owner?.username !== me?.username && live.connect.length > 0 && (
          <Text size="xs" c="dimmed" mt="xs">
            Its owner and the project&apos;s admins get these links with their access parameters (such as a token).
          </Text>
        )}
        <SshPanel service={service} running={live.status === "RUNNING"} onChanged={reload} />
      </Section>
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <Section title="Overview">
          <SimpleGrid cols={{ base: 1, xs: 2 }}>
            <Field label="Template">
              <Group gap={6}>
                <Text size="sm">{service.template?.displayName ?? service.templateName}</Text>
                {service.template && <VendorBadge vendor={service.template.vendor} />}
              </Group>
              {!service.template && (
                <Text size="xs" c="dimmed">
                  The template was deleted; this service keeps its copy.
                </Text>
              )}
            </Field>
            <Field label="Owner">
              <OwnerText owner={service.owner} />
            </Field>
            <Field label="Compute instance">
              <Anchor component={Link} to={`/p/${project}/instances/${instance.id}`} size="sm">
                {instance.displayName || instance.name}
              </Anchor>
              {instance.cluster && (
                <Text size="xs" c="dimmed">
                  on {instance.cluster.displayName || instance.cluster.name}
                </Text>
              )}
            </Field>
            <Field label="GPUs">
              <Text size="sm">
                {service.gpuCount === 0
                  ? "None"
                  : `${service.gpuCount} × ${instance.resources.gpuVendor}${instance.resources.gpuModel ? ` ${instance.resources.gpuModel}` : ""}`}
              </Text>
              <Text size="xs" c="dimmed">
                of the compute instance&apos;s {instance.resources.gpuCount}
              </Text>
            </Field>
            <Field label="Created">
              <Text size="sm">{new Date(service.createdAt).toLocaleString()}</Text>
            </Field>
            <Field label="Updated">
              <Text size="sm">{new Date(service.updatedAt).toLocaleString()}</Text>
            </Field>
          </SimpleGrid>
        </Section>
        <Section title="Container">
          <SimpleGrid cols={{ base: 1, xs: 2 }}>
            <Field label="Image">
              <Code style={{ wordBreak: "break-all" }}>{service.image}</Code>
            </Field>
            <Field label="Image pull policy">
              <Text size="sm">{pullPolicyLabel(service.imagePullPolicy)}</Text>
            </Field>
            <Field label="Container disk">
              <Text size="sm">{service.containerDisk}</Text>
            </Field>
            <Field label="Mount path">
              <Code>{service.mountPath}</Code>
            </Field>
            <Field label="GPU partition">
              {service.gpuPartition ? <Code>{service.gpuPartition}</Code> : <Text size="sm">Whole GPUs</Text>}
            </Field>
            <Field label="Image pull secret">
              {service.imagePullSecret ? <Code>{service.imagePullSecret}</Code> : <Text size="sm">None</Text>}
            </Field>
            <Field label="Storage">
              <Text size="sm" data-testid="service-storage">
                {storageSummary(service.storage)}
              </Text>
            </Field>
            <Field label="CPU and memory">
              <Text size="sm" data-testid="service-resources">
                {resourcesSummary(service.resources)}
              </Text>
            </Field>
          </SimpleGrid>
          <Field label="Start command">
            {service.command.length ? (
              <Code block style={{ whiteSpace: "pre-wrap", wordBreak: "break-all" }}>
                {service.command.join("\n")}
              </Code>
            ) : (
              <Text size="sm" c="dimmed">
                The image&apos;s entrypoint
              </Text>
            )}
          </Field>
        </Section>
      </SimpleGrid>
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <Section title="Ports">
          {service.ports.length ? (
            <Table.ScrollContainer minWidth={360}>
              <Table>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>Port</Table.Th>
                    <Table.Th>Access params</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {service.ports.map((port) => (
                    <Table.Tr key={port.name}>
                      <Table.Td>{port.name}</Table.Td>
                      <Table.Td>
                        {port.port}/{port.protocol}
                      </Table.Td>
                      <Table.Td>
                        {port.accessParams.length ? (
                          <Code>{port.accessParams.map((p) => `${p.key}=${p.value}`).join("&")}</Code>
                        ) : (
                          "—"
                        )}
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
          ) : (
            <Text size="sm" c="dimmed">
              No ports.
            </Text>
          )}
        </Section>
        <Section title="Environment variables">
          {service.env.length ? (
            <Table.ScrollContainer minWidth={360}>
              <Table>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>Value</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {service.env.map((pair) => (
                    <Table.Tr key={pair.key}>
                      <Table.Td>
                        <Code>{pair.key}</Code>
                      </Table.Td>
                      <Table.Td style={{ wordBreak: "break-all" }}>{pair.value}</Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
          ) : (
            <Text size="sm" c="dimmed">
              None.
            </Text>
          )}
        </Section>
      </SimpleGrid>
      <LogsPanel service={service} status={live.status} />
      <ClusterEventsPanel kind="service" id={service.id} />
      <Text size="xs" c="dimmed">
        The spec is shown as written: {"{{generated_token}}"} stands for the value generated for this service, which the
        Connect links carry.
      </Text>
    </Stack>
  );
}

export function ServiceDetailPage() {
  const { id = "" } = useParams();
  const [{ data, error }, refetch] = useQuery({
    query: ServiceDetailDocument,
    variables: { id },
    requestPolicy: "cache-and-network",
  });
  const reload = useCallback(() => refetch({ requestPolicy: "network-only" }), [refetch]);
  if (error && !data) {
    return <ErrorState message={describeError(error) ?? "Could not load the service instance."} onRetry={reload} />;
  }
  if (!data) return <Loading label="Loading the service instance" />;
  if (!data.serviceInstance) {
    return <ErrorState message="No such service instance: it has been deleted, or it is not in a project of yours." />;
  }
  return <ServiceView service={data.serviceInstance} reload={reload} />;
}
