import { ActionIcon, Badge, Button, Code, Group, SegmentedControl, Select, Stack, Table, Text, TextInput, Title, Tooltip } from "@mantine/core";
import { IconChevronDown, IconChevronRight } from "@tabler/icons-react";
import { Fragment, useState } from "react";
import { useQuery } from "urql";

import { useAuth } from "../../app/auth";
import { useProject } from "../../app/project";
import { describeError } from "../../components/errors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import { AuditLogDocument } from "./queries";

const PAGE = 25;
const OUTCOME_COLORS: Record<string, string> = { SUCCESS: "green", REFUSED: "orange", FAILED: "red" };

type Filters = { actor: string; action: string; objectType: string; outcome: string | null; since: string; until: string };
const NO_FILTERS: Filters = { actor: "", action: "", objectType: "", outcome: null, since: "", until: "" };

/** A date (yyyy-mm-dd, the browser's date input) as the start of that day in UTC. */
function dayStart(day: string): string | undefined {
  return day ? `${day}T00:00:00Z` : undefined;
}

/** The day after, for an inclusive "until" day. */
function dayAfter(day: string): string | undefined {
  if (!day) return undefined;
  const next = new Date(`${day}T00:00:00Z`);
  next.setUTCDate(next.getUTCDate() + 1);
  return next.toISOString();
}

/** The filter the API takes: empty fields left out; the project unless a platform admin reads all. */
export function apiFilter(filters: Filters, project: string | null): Record<string, string> {
  const filter: Record<string, string> = {};
  if (project) filter.project = project;
  if (filters.actor.trim()) filter.actor = filters.actor.trim();
  if (filters.action.trim()) filter.action = filters.action.trim();
  if (filters.objectType.trim()) filter.objectType = filters.objectType.trim();
  if (filters.outcome) filter.outcome = filters.outcome;
  const since = dayStart(filters.since);
  const until = dayAfter(filters.until);
  if (since) filter.since = since;
  if (until) filter.until = until;
  return filter;
}

function JsonValue({ value }: { value: string | null | undefined }) {
  if (value === null || value === undefined) return <Text c="dimmed" size="xs">(none)</Text>;
  return (
    <Code block style={{ whiteSpace: "pre-wrap", wordBreak: "break-all", maxHeight: 160, overflow: "auto" }}>
      {value}
    </Code>
  );
}

export function AuditLogPage() {
  const { project } = useProject();
  const { me } = useAuth();
  const platformAdmin = Boolean(me?.isPlatformAdmin);
  const [scope, setScope] = useState<"project" | "all">("project");
  const [draft, setDraft] = useState<Filters>(NO_FILTERS);
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  // The cursors of the pages before the one shown (paging goes newest first).
  const [cursors, setCursors] = useState<(string | null)[]>([]);
  const [after, setAfter] = useState<string | null>(null);
  const [open, setOpen] = useState<Record<string, boolean>>({});

  const filter = apiFilter(filters, platformAdmin && scope === "all" ? null : project);
  const [{ data, error, fetching }, refetch] = useQuery({
    query: AuditLogDocument,
    variables: { filter, first: PAGE, after },
    requestPolicy: "cache-and-network",
  });
  const reload = () => refetch({ requestPolicy: "network-only" });

  const apply = () => {
    setFilters(draft);
    setCursors([]);
    setAfter(null);
  };
  const clear = () => {
    setDraft(NO_FILTERS);
    setFilters(NO_FILTERS);
    setCursors([]);
    setAfter(null);
  };
  const log = data?.auditLog;
  const page = cursors.length + 1;

  return (
    <Stack>
      <Group justify="space-between" align="flex-end">
        <Stack gap={2}>
          <Title order={2}>Audit log</Title>
          <Text c="dimmed" size="sm">
            Who changed what, when, from where, and what was refused. Secrets show as [redacted].
          </Text>
        </Stack>
        {platformAdmin && (
          <SegmentedControl
            aria-label="Scope"
            value={scope}
            onChange={(value) => {
              setScope(value === "all" ? "all" : "project");
              setCursors([]);
              setAfter(null);
            }}
            data={[
              { label: `Project ${project}`, value: "project" },
              { label: "All projects", value: "all" },
            ]}
          />
        )}
      </Group>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          apply();
        }}
      >
        <Group align="flex-end" gap="sm">
          <TextInput label="Actor" placeholder="username" value={draft.actor} onChange={(e) => setDraft({ ...draft, actor: e.currentTarget.value })} />
          <TextInput label="Action" placeholder="deployComputeInstance" value={draft.action} onChange={(e) => setDraft({ ...draft, action: e.currentTarget.value })} />
          <TextInput label="Object type" placeholder="ComputeInstance" value={draft.objectType} onChange={(e) => setDraft({ ...draft, objectType: e.currentTarget.value })} />
          <Select
            label="Outcome"
            placeholder="Any"
            clearable
            data={["SUCCESS", "REFUSED", "FAILED"]}
            value={draft.outcome}
            onChange={(value) => setDraft({ ...draft, outcome: value })}
          />
          <TextInput label="From" type="date" value={draft.since} onChange={(e) => setDraft({ ...draft, since: e.currentTarget.value })} />
          <TextInput label="To" type="date" value={draft.until} onChange={(e) => setDraft({ ...draft, until: e.currentTarget.value })} />
          <Button type="submit">Apply</Button>
          <Button variant="default" onClick={clear}>
            Clear
          </Button>
        </Group>
      </form>
      {error && !log ? (
        <ErrorState message={describeError(error) ?? "Could not load the audit log."} onRetry={reload} />
      ) : !log ? (
        <Loading label="Loading the audit log" />
      ) : log.edges.length === 0 ? (
        <EmptyState title="No entries">Nothing recorded matches these filters.</EmptyState>
      ) : (
        <>
          <Table.ScrollContainer minWidth={1000}>
            <Table verticalSpacing="xs" highlightOnHover>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th w={36} />
                  <Table.Th>When</Table.Th>
                  <Table.Th>Actor</Table.Th>
                  <Table.Th>Action</Table.Th>
                  <Table.Th>Object</Table.Th>
                  {scope === "all" && <Table.Th>Project</Table.Th>}
                  <Table.Th>Outcome</Table.Th>
                  <Table.Th>From</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {log.edges.map(({ node: entry }) => {
                  const expanded = Boolean(open[entry.id]);
                  const detail = entry.changes.length > 0 || entry.errorMessage;
                  return (
                    <Fragment key={entry.id}>
                      <Table.Tr data-testid={`audit-${entry.id}`}>
                        <Table.Td>
                          {detail && (
                            <ActionIcon
                              variant="subtle"
                              aria-label={expanded ? "Hide the changes" : "Show the changes"}
                              onClick={() => setOpen({ ...open, [entry.id]: !expanded })}
                            >
                              {expanded ? <IconChevronDown size={16} /> : <IconChevronRight size={16} />}
                            </ActionIcon>
                          )}
                        </Table.Td>
                        <Table.Td>
                          <Text size="sm">{new Date(entry.at).toLocaleString()}</Text>
                        </Table.Td>
                        <Table.Td>
                          <Text size="sm" fw={500}>
                            {entry.actorName}
                          </Text>
                          <Text size="xs" c="dimmed">
                            {entry.actorKind === "USER"
                              ? entry.credentialKind === "TOKEN"
                                ? `API token ${entry.credentialName ?? ""}`
                                : "session"
                              : entry.actorKind.toLowerCase()}
                          </Text>
                        </Table.Td>
                        <Table.Td>
                          <Text size="sm" ff="monospace">
                            {entry.action}
                          </Text>
                        </Table.Td>
                        <Table.Td>
                          <Text size="sm">{entry.objectName ?? entry.objectId ?? ""}</Text>
                          <Text size="xs" c="dimmed">
                            {entry.objectType}
                          </Text>
                        </Table.Td>
                        {scope === "all" && <Table.Td>{entry.project ?? ""}</Table.Td>}
                        <Table.Td>
                          <Tooltip label={entry.errorMessage ?? ""} disabled={!entry.errorMessage}>
                            <Badge color={OUTCOME_COLORS[entry.outcome] ?? "gray"} variant="light">
                              {entry.errorCode ? `${entry.outcome} ${entry.errorCode}` : entry.outcome}
                            </Badge>
                          </Tooltip>
                        </Table.Td>
                        <Table.Td>
                          <Text size="xs" ff="monospace">
                            {entry.address ?? ""}
                          </Text>
                        </Table.Td>
                      </Table.Tr>
                      {expanded && (
                        <Table.Tr>
                          <Table.Td />
                          <Table.Td colSpan={scope === "all" ? 7 : 6}>
                            {entry.errorMessage && (
                              <Text size="sm" c="orange" mb="xs">
                                {entry.errorMessage}
                              </Text>
                            )}
                            {entry.changes.length > 0 && (
                              <Table aria-label="Changes" withTableBorder>
                                <Table.Thead>
                                  <Table.Tr>
                                    <Table.Th>Field</Table.Th>
                                    <Table.Th>Before</Table.Th>
                                    <Table.Th>After</Table.Th>
                                  </Table.Tr>
                                </Table.Thead>
                                <Table.Tbody>
                                  {entry.changes.map((change) => (
                                    <Table.Tr key={change.field}>
                                      <Table.Td>
                                        <Text size="sm" ff="monospace">
                                          {change.field}
                                        </Text>
                                      </Table.Td>
                                      <Table.Td>
                                        <JsonValue value={change.before} />
                                      </Table.Td>
                                      <Table.Td>
                                        <JsonValue value={change.after} />
                                      </Table.Td>
                                    </Table.Tr>
                                  ))}
                                </Table.Tbody>
                              </Table>
                            )}
                          </Table.Td>
                        </Table.Tr>
                      )}
                    </Fragment>
                  );
                })}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          <Group justify="space-between">
            <Text size="sm" c="dimmed">
              {log.totalCount} {log.totalCount === 1 ? "entry" : "entries"} · page {page}
            </Text>
            <Group gap="xs">
              <Button
                variant="default"
                disabled={cursors.length === 0 || fetching}
                onClick={() => {
                  const previous = cursors.slice(0, -1);
                  setAfter(cursors[cursors.length - 1] ?? null);
                  setCursors(previous);
                }}
              >
                Newer
              </Button>
              <Button
                variant="default"
                disabled={!log.pageInfo.hasNextPage || fetching}
                onClick={() => {
                  setCursors([...cursors, after]);
                  setAfter(log.pageInfo.endCursor ?? null);
                }}
              >
                Older
              </Button>
            </Group>
          </Group>
        </>
      )}
    </Stack>
  );
}
