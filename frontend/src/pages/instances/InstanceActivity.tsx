/* The sections of the compute instance page that show what happens to it: its live status
 * updates, its runs and the service instances running in it. */
import { Badge, Button, Group, Table, Text, Timeline } from "@mantine/core";
import { IconApps, IconRocket } from "@tabler/icons-react";
import { Link } from "react-router-dom";

import { StatusBadge, statusLabel } from "../../components/StatusBadge";
import { Panel } from "../../components/Section";
import { useConnection } from "../../hooks/useConnection";
import { ReasonButton } from "./actions";
import { RunStatusBadge } from "./RunStatusBadge";
import { when, type Instance, type Live } from "./overview";

/** The statuses as the live events told them since the page opened. */
export function StatusUpdates({ status, history }: { status: string; history: Live["history"] }) {
  return (
    <Panel title="Status updates" action={<LiveBadge />}>
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
              {entry.missed && (
                <Text size="xs" c="orange" data-testid="status-updates-missed">
                  Changes before this one were missed while the connection was down.
                </Text>
              )}
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
    </Panel>
  );
}

/** The deployment runs, newest first. */
export function Runs({ runs }: { runs: Instance["runs"] }) {
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

/** The GPU service instances that run in it, and Launch service. */
export function Services({ instance, project, status, readOnly }: { instance: Instance; project: string; status: string; readOnly: boolean }) {
  const base = `/p/${project}`;
  const launchReason = readOnly
    ? "Only the instance's own project may launch services in it."
    : status !== "SUCCESS"
      ? "Services run in a deployed instance: launch one once the status is Success."
      : null;
  return (
    <Panel
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
    </Panel>
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
