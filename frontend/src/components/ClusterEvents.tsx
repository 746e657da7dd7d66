/* The Events panel of the service and compute instance pages: the Kubernetes events of the
 * instance's objects, live (a repeat of an event replaces it, with its count raised). */
import { Alert, Badge, Group, Table, Text, Tooltip } from "@mantine/core";
import { IconAlertTriangle } from "@tabler/icons-react";
import { useEffect, useState } from "react";
import { useSubscription } from "urql";

import { graphql } from "../gql";
import type { ClusterEventFieldsFragment, ComputeEventsLiveSubscription, ServiceEventsLiveSubscription } from "../gql/graphql";
import { describeError } from "./errors";
import { Panel } from "./Section";

export const ClusterEventFieldsDocument = graphql(`
  fragment ClusterEventFields on ClusterEvent {
    name
    type
    reason
    message
    objectKind
    objectName
    count
    firstAt
    lastAt
  }
`);

export const ServiceEventsLiveDocument = graphql(`
  subscription ServiceEventsLive($id: ID!) {
    serviceInstanceClusterEvents(id: $id) {
      ...ClusterEventFields
    }
  }
`);

export const ComputeEventsLiveDocument = graphql(`
  subscription ComputeEventsLive($id: ID!) {
    computeInstanceClusterEvents(id: $id) {
      ...ClusterEventFields
    }
  }
`);

export type ClusterEvent = ClusterEventFieldsFragment;

/** The most events the panel keeps (the oldest go first). */
export const MAX_EVENTS = 200;

/** `events` with `event` in: a repeat (the same name) replaces the one before; oldest first by
 * the time it was last seen. */
export function addEvent(events: readonly ClusterEvent[], event: ClusterEvent): ClusterEvent[] {
  const others = events.filter((e) => e.name !== event.name);
  const next = [...others, event];
  next.sort((a, b) => time(a.lastAt ?? a.firstAt) - time(b.lastAt ?? b.firstAt));
  return next.slice(-MAX_EVENTS);
}

function time(value: string | null | undefined): number {
  const parsed = value ? Date.parse(value) : Number.NaN;
  return Number.isNaN(parsed) ? 0 : parsed;
}

function ago(value: string | null | undefined, now: number): string {
  if (!value) return "—";
  const seconds = Math.max(0, Math.round((now - time(value)) / 1000));
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86400)}d ago`;
}

/** The time now, again every `seconds` (for "12s ago"). */
function useNow(seconds = 10): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), seconds * 1000);
    return () => window.clearInterval(timer);
  }, [seconds]);
  return now;
}

/** The events as a table, newest last (as `kubectl get events` lists them). */
export function EventsTable({ events }: { events: readonly ClusterEvent[] }) {
  const now = useNow();
  return (
    <Table.ScrollContainer minWidth={720}>
      <Table verticalSpacing={4} fz="sm" aria-label="Events">
        <Table.Thead>
          <Table.Tr>
            <Table.Th miw={96}>Type</Table.Th>
            <Table.Th>Reason</Table.Th>
            <Table.Th>Object</Table.Th>
            <Table.Th>Message</Table.Th>
            <Table.Th>Count</Table.Th>
            <Table.Th miw={80}>Last seen</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {events.map((event) => (
            <Table.Tr key={event.name} data-event={event.reason}>
              <Table.Td>
                <Badge size="sm" variant="light" color={event.type === "WARNING" ? "orange" : "gray"} style={{ overflow: "visible" }}>
                  {event.type === "WARNING" ? "Warning" : "Normal"}
                </Badge>
              </Table.Td>
              <Table.Td>{event.reason}</Table.Td>
              <Table.Td>
                <Text size="xs" ff="monospace">
                  {event.objectKind}/{event.objectName}
                </Text>
              </Table.Td>
              <Table.Td style={{ wordBreak: "break-word" }}>{event.message}</Table.Td>
              <Table.Td>{event.count}</Table.Td>
              <Table.Td>
                <Tooltip label={event.lastAt ? new Date(event.lastAt).toLocaleString() : "not said"} withArrow>
                  <Text size="xs" span>
                    {ago(event.lastAt ?? event.firstAt, now)}
                  </Text>
                </Tooltip>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

type Accumulated = { events: ClusterEvent[] };

/** Where a subscription is: nothing came yet, events come, it ended (the server completed it), it
 * failed. urql marks a subscription's results `hasNext` until it completes. */
export function streamState(result: { data?: unknown; error?: unknown; fetching: boolean }): "waiting" | "live" | "ended" | "failed" {
  if (result.error) return "failed";
  if (result.data === undefined) return result.fetching ? "waiting" : "ended";
  return (result as { hasNext?: boolean }).hasNext === false ? "ended" : "live";
}

/** The instance's events, live: those there are, then new ones and repeats as they happen. */
export function ClusterEventsPanel({ kind, id }: { kind: "service" | "compute"; id: string }) {
  const query = kind === "service" ? ServiceEventsLiveDocument : ComputeEventsLiveDocument;
  const [result] = useSubscription<Partial<ServiceEventsLiveSubscription & ComputeEventsLiveSubscription>, Accumulated, { id: string }>(
    { query, variables: { id } },
    (previous, next) => {
      const event = next.serviceInstanceClusterEvents ?? next.computeInstanceClusterEvents;
      return { events: event ? addEvent(previous?.events ?? [], event) : (previous?.events ?? []) };
    },
  );
  const { data, error } = result;
  const stream = streamState(result);
  const events = data?.events ?? [];
  const problem = describeError(error);
  return (
    <Panel
      title="Events"
      action={
        <Group gap="xs">
          {problem ? (
            <Badge variant="dot" color="orange" size="sm">
              Stopped
            </Badge>
          ) : (
            <Badge variant="dot" color={stream === "ended" ? "gray" : "green"} size="sm">
              {stream === "ended" ? "Ended" : "Live"}
            </Badge>
          )}
        </Group>
      }
    >
      {problem && (
        <Alert color="orange" icon={<IconAlertTriangle size={18} />} mb="sm" role="alert" title="The events cannot be read">
          {problem}
        </Alert>
      )}
      {events.length === 0 ? (
        !problem && (
          <Text size="sm" c="dimmed">
            No events yet: the cluster reports them as {kind === "service" ? "the service" : "the instance"} is scheduled, pulls its image
            and starts, and when something goes wrong.
          </Text>
        )
      ) : (
        <EventsTable events={events} />
      )}
    </Panel>
  );
}
