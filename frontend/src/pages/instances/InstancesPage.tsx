import { Anchor, Badge, Button, Card, Center, Group, Loader, Select, Stack, Table, Text, TextInput, Title, Tooltip, VisuallyHidden } from "@mantine/core";
import { useDebouncedValue, useMediaQuery } from "@mantine/hooks";
import { IconPlus, IconSearch } from "@tabler/icons-react";
import { useCallback, useEffect, useEffectEvent, useRef, useState, type ReactNode } from "react";
import { Link, useSearchParams } from "react-router-dom";

import { useAuth } from "../../app/auth";
import { useProject } from "../../app/project";
import { describeError } from "../../components/errors";
import { SharingModal, type SharingTarget } from "../../components/SharingModal";
import { MineAllControl, OwnerText, useMineFilter } from "../../components/Owner";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import { StatusBadge, statusLabel } from "../../components/StatusBadge";
import type { DeploymentStatus } from "../../gql/graphql";
import { DeleteInstanceModal, DestroyInstanceModal, useInstanceActions, type InstanceRef } from "./actions";
import { GoneWatcher } from "./GoneWatcher";
import { InstanceRowMenu } from "./InstanceRowMenu";
import { currentStatus, useInstanceEvents } from "./live";
import { SharingBadge } from "./SharingBadge";
import { useInstanceList, type Row } from "./useInstanceList";

export const STATUSES: DeploymentStatus[] = ["NOT_DEPLOYED", "WAITING", "IN_PROGRESS", "SUCCESS", "FAILED", "DESTROYING"];

/** The project's compute instances (and those shared with it), statuses live. */
export function InstancesPage() {
  const { project } = useProject();
  const [params, setParams] = useSearchParams();
  const statusParam = params.get("status");
  const status = STATUSES.includes(statusParam as DeploymentStatus) ? (statusParam as DeploymentStatus) : null;
  const [search, setSearch] = useState(params.get("q") ?? "");
  const [debounced] = useDebouncedValue(search.trim(), 300);
  const [mine, setMine] = useMineFilter();
  const { me } = useAuth();
  const list = useInstanceList(project, debounced, status, mine);
  const live = useInstanceEvents(project);
  const actions = useInstanceActions();
  const [busy, setBusy] = useState<Record<string, string>>({});
  const [deleting, setDeleting] = useState<InstanceRef | null>(null);
  const [sharing, setSharing] = useState<SharingTarget | null>(null);
  const [destroying, setDestroying] = useState<Row | null>(null);
  const phone = useMediaQuery("(max-width: 48em)", false, { getInitialValueInEffect: false });
  const base = `/p/${project}`;

  // The search goes into the address too (?q=), so that a link or a reload keeps it.
  const written = useRef(debounced);
  useEffect(() => {
    if (written.current === debounced) return;
    written.current = debounced;
    setParams(
      (current) => {
        const next = new URLSearchParams(current);
        if (debounced) next.set("q", debounced);
        else next.delete("q");
        return next;
      },
      { replace: true },
    );
  }, [debounced, setParams]);

  // An event about an instance the list does not hold: a new one (or one newly shared, or newly
  // given to the caller). Ask again. (Only a new event asks: rows changing by themselves must not,
  // or a filtered-out instance's event would ask again after every answer; with "Mine", neither
  // does one about someone else's instance.)
  const holds = useEffectEvent(
    (event: { id: string; owner: string | null }) => list.rows.some((row) => row.id === event.id) || (mine && event.owner !== me?.username),
  );
  const { refresh } = list;
  const lastEvent = live.feed[0];
  const { loaded } = list;
  useEffect(() => {
    if (!loaded || !lastEvent || holds(lastEvent)) return;
    const timer = window.setTimeout(refresh, 400);
    return () => window.clearTimeout(timer);
  }, [loaded, lastEvent, refresh]);

  // Events were missed (the socket was down longer than the server keeps them): ask again.
  const missed = live.missed;
  const askedFor = useRef<string | null>(null);
  useEffect(() => {
    if (missed === null || askedFor.current === missed) return;
    askedFor.current = missed;
    refresh();
  }, [missed, refresh]);

  const ref = (row: Row): InstanceRef => ({
    id: row.id,
    name: row.name,
    displayName: row.displayName,
    status: currentStatus(row, live).status,
  });

  const run = async (row: Row, kind: "deploy" | "destroy") => {
    setBusy((b) => ({ ...b, [row.id]: kind }));
    const changed = kind === "deploy" ? await actions.deploy(ref(row)) : await actions.destroy(ref(row));
    setBusy(({ [row.id]: _, ...rest }) => rest);
    if (changed) list.patch(row.id, { status: changed.status, statusMessage: changed.statusMessage, updatedAt: changed.updatedAt, actions: changed.actions });
  };

  const { drop } = list;
  const onGone = useCallback((id: string) => drop(id), [drop]);

  const setStatus = (value: string | null) =>
    setParams(
      (current) => {
        const next = new URLSearchParams(current);
        if (value) next.set("status", value);
        else next.delete("status");
        return next;
      },
      { replace: true },
    );

  const nameCell = (row: Row) => (
    <Stack gap={0} style={{ minWidth: 0 }}>
      <Anchor component={Link} to={`${base}/instances/${row.id}`} fw={500}>
        {row.displayName}
      </Anchor>
      <Text size="xs" c="dimmed" ff="monospace">
        {row.name}
      </Text>
    </Stack>
  );

  const sharingCell = (row: Row) =>
    row.project.name !== project ? (
      <Tooltip label="Shared with this project read-only by its own project">
        <Badge variant="outline" color="gray" tt="none">
          From {row.project.displayName || row.project.name}
        </Badge>
      </Tooltip>
    ) : (
      <SharingBadge sharing={row.sharing} />
    );

  const actionsCell = (row: Row) => (
    <InstanceRowMenu
      row={row}
      actions={currentStatus(row, live).actions}
      base={base}
      busy={Boolean(busy[row.id])}
      onDeploy={() => void run(row, "deploy")}
      onDestroy={() => setDestroying(row)}
      onShare={() => setSharing({ id: row.id, name: row.name, displayName: row.displayName, project: row.project.name, sharing: row.sharing })}
      onDelete={() => setDeleting(ref(row))}
    />
  );

  let body: ReactNode;
  if (list.error && !list.loaded) {
    body = <ErrorState message={describeError(list.error) ?? "The compute instances could not be loaded."} onRetry={list.refresh} />;
  } else if (!list.loaded) {
    body = <Loading label="Loading compute instances" />;
  } else if (list.rows.length === 0 && mine && !debounced && !status) {
    body = (
      <EmptyState
        title="You own no compute instance here"
        action={
          <Button variant="light" onClick={() => setMine(false)}>
            Show all
          </Button>
        }
      >
        Instances you launch are yours; a project admin may also give you one.
      </EmptyState>
    );
  } else if (list.rows.length === 0 && (debounced || status)) {
    body = (
      <EmptyState
        title="No compute instance matches"
        action={
          <Button
            variant="light"
            onClick={() => {
              setSearch("");
              setStatus(null);
            }}
          >
            Clear the filters
          </Button>
        }
      >
        {debounced ? `Nothing matches “${debounced}”` : "Nothing"}
        {status ? ` with the status ${statusLabel(status)}` : ""}.
      </EmptyState>
    );
  } else if (list.rows.length === 0) {
    body = (
      <EmptyState
        title="No compute instances yet"
        action={
          <Button component={Link} to={`${base}/catalog`}>
            Browse the catalog
          </Button>
        }
      >
        Launch a compute instance from a SKU of the catalog: it appears here with its deployment status.
      </EmptyState>
    );
  } else if (phone) {
    body = (
      <Stack gap="sm" role="list" aria-label="Compute instances">
        {list.rows.map((row) => {
          const { status: rowStatus, message } = currentStatus(row, live);
          return (
            <Card key={row.id} withBorder padding="md" role="listitem" data-testid={`instance-row-${row.name}`}>
              <Group justify="space-between" wrap="nowrap" align="flex-start">
                {nameCell(row)}
                {actionsCell(row)}
              </Group>
              <Stack gap={2} mt="xs" align="flex-start">
                <StatusBadge status={rowStatus} />
                {message && (
                  <Text size="xs" c={rowStatus === "FAILED" ? "red" : "dimmed"} lineClamp={3}>
                    {message}
                  </Text>
                )}
              </Stack>
              <Group gap="xs" mt="xs" wrap="wrap">
                {sharingCell(row)}
                <OwnerText owner={row.owner} size="xs" />
                <Text size="xs" c="dimmed">
                  {row.profileName} · {new Date(row.createdAt).toLocaleString()}
                </Text>
              </Group>
            </Card>
          );
        })}
      </Stack>
    );
  } else {
    body = (
      <Table.ScrollContainer minWidth={960}>
        <Table highlightOnHover verticalSpacing="sm" aria-label="Compute instances">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Publish status</Table.Th>
              <Table.Th>Owner</Table.Th>
              <Table.Th>Sharing</Table.Th>
              <Table.Th>Profile</Table.Th>
              <Table.Th>Created</Table.Th>
              <Table.Th w={56}>
                <VisuallyHidden>Actions</VisuallyHidden>
              </Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.rows.map((row) => {
              const { status: rowStatus, message } = currentStatus(row, live);
              return (
                <Table.Tr key={row.id} data-testid={`instance-row-${row.name}`}>
                  <Table.Td>{nameCell(row)}</Table.Td>
                  <Table.Td>
                    <Stack gap={2} align="flex-start">
                      <StatusBadge status={rowStatus} />
                      {message && (
                        <Text size="xs" c={rowStatus === "FAILED" ? "red" : "dimmed"} lineClamp={2} maw={260}>
                          {message}
                        </Text>
                      )}
                    </Stack>
                  </Table.Td>
                  <Table.Td>
                    <OwnerText owner={row.owner} />
                  </Table.Td>
                  <Table.Td>{sharingCell(row)}</Table.Td>
                  <Table.Td>
                    {row.profile ? (
                      <Anchor component={Link} to={`${base}/catalog/${row.profile.id}`} size="sm">
                        {row.profileName}
                      </Anchor>
                    ) : (
                      <Text size="sm">{row.profileName}</Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm">{new Date(row.createdAt).toLocaleString()}</Text>
                  </Table.Td>
                  <Table.Td>{actionsCell(row)}</Table.Td>
                </Table.Tr>
              );
            })}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
    );
  }

  return (
    <Stack gap="md">
      <Group justify="space-between" align="flex-end" wrap="wrap">
        <Stack gap={2}>
          <Title order={2}>Compute Instances</Title>
          <Text c="dimmed" size="sm">
            {list.loaded ? `${list.total} instance${list.total === 1 ? "" : "s"}` : "Instances of this project and those shared with it"}
            {" · statuses update live"}
          </Text>
        </Stack>
        <Button component={Link} to={`${base}/catalog`} leftSection={<IconPlus size={16} />}>
          New Compute Instance
        </Button>
      </Group>
      <Group gap="sm" wrap="wrap">
        <MineAllControl mine={mine} onChange={setMine} what="compute instances" />
        <TextInput
          aria-label="Search compute instances"
          placeholder="Search by name or description"
          leftSection={<IconSearch size={16} />}
          value={search}
          onChange={(event) => setSearch(event.currentTarget.value)}
          w={{ base: "100%", sm: 320 }}
          rightSection={list.fetching && list.loaded ? <Loader size="xs" aria-label="Searching" /> : undefined}
        />
        <Select
          aria-label="Status"
          placeholder="Any status"
          clearable
          data={STATUSES.map((value) => ({ value, label: statusLabel(value) }))}
          value={status}
          onChange={setStatus}
          w={{ base: "100%", sm: 200 }}
          comboboxProps={{ withinPortal: true }}
        />
      </Group>
      {body}
      {list.loadMoreError && <ErrorState message={describeError(list.loadMoreError) ?? "More instances could not be loaded."} onRetry={list.loadMore} />}
      {list.hasMore && (
        <Center>
          <Button variant="default" onClick={list.loadMore} loading={list.loadingMore}>
            Load more ({list.rows.length} of {list.total})
          </Button>
        </Center>
      )}
      {list.rows
        .filter((row) => currentStatus(row, live).status === "DESTROYING")
        .map((row) => (
          <GoneWatcher key={row.id} id={row.id} onGone={onGone} />
        ))}
      <DeleteInstanceModal
        instance={deleting}
        onClose={() => setDeleting(null)}
        onDeleted={(instance) => {
          setDeleting(null);
          // A deployed one is destroyed first (its row says so until it is gone, and the list asks
          // what may be done with it now); the rest go at once.
          if (instance.status === "NOT_DEPLOYED") {
            list.drop(instance.id);
          } else {
            list.patch(instance.id, { status: "DESTROYING", statusMessage: "deleting: destroying its resources first", updatedAt: new Date().toISOString() });
            list.refresh();
          }
        }}
      />
      <DestroyInstanceModal
        instance={destroying ? ref(destroying) : null}
        onClose={() => setDestroying(null)}
        onConfirm={async () => {
          const row = destroying;
          setDestroying(null);
          if (row) await run(row, "destroy");
        }}
      />
      <SharingModal
        kind="instance"
        target={sharing}
        onClose={() => setSharing(null)}
        onSaved={(id, value) => list.patch(id, { sharing: { ...value, projects: [...value.projects] } })}
      />
    </Stack>
  );
}
