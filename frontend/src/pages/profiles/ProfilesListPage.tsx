import { ActionIcon, Anchor, Button, Group, Menu, Stack, Table, Text, TextInput, Title, VisuallyHidden } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { notifications } from "@mantine/notifications";
import { IconDots, IconPencil, IconPlus, IconSearch, IconShare, IconTrash } from "@tabler/icons-react";
import { useCallback, useEffect, useState } from "react";
import { Link, useNavigate } from "react-router-dom";
import { useMutation, useQuery } from "urql";

import { useProject } from "../../app/project";
import { describeError } from "../../components/errors";
import { SharingModal, type SharingTarget } from "../../components/SharingModal";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import type { ProfilesListQuery } from "../../gql/graphql";
import { ConfirmDeleteModal } from "./ConfirmDeleteModal";
import { allocationLabel, formatDate, ResourcesSummary, SharingSummary } from "./common";
import { PROFILES_PAGE_SIZE, ProfileDeleteDocument, ProfilesListDocument } from "./operations";

type Row = ProfilesListQuery["computeProfiles"]["edges"][number]["node"];

interface PageState {
  endCursor: string | null;
  hasNextPage: boolean;
  fetching: boolean;
}

/** Studio > Compute Profiles: the project's profiles, searchable, a page at a time ("Load more"). */
export function ProfilesListPage() {
  const { project } = useProject();
  const navigate = useNavigate();
  const [search, setSearch] = useState("");
  const [debounced] = useDebouncedValue(search.trim(), 300);
  const variables = { project, search: debounced || null, first: PROFILES_PAGE_SIZE };
  // cache-and-network: an empty first page names no ComputeProfile, so adding one would not refetch it.
  const [{ data, fetching, error }, reexecute] = useQuery({ query: ProfilesListDocument, variables, requestPolicy: "cache-and-network" });
  // Pages after the first: each asks for the page after the one before it. Another project or
  // search starts again from the first page.
  const listKey = JSON.stringify([project, debounced]);
  const [more, setMore] = useState<{ key: string; pages: number; states: Record<number, PageState> }>({ key: listKey, pages: 0, states: {} });
  const current = more.key === listKey ? more : { key: listKey, pages: 0, states: {} };
  const extraPages = current.pages;
  const extraStates = current.states;
  const [refreshToken, setRefreshToken] = useState(0);
  const [sharing, setSharing] = useState<SharingTarget | null>(null);
  const [deleting, setDeleting] = useState<Row | null>(null);
  const [, deleteProfile] = useMutation(ProfileDeleteDocument);

  const refresh = useCallback(() => {
    reexecute({ requestPolicy: "network-only" });
    setRefreshToken((token) => token + 1);
  }, [reexecute]);

  const reportPage = useCallback(
    (index: number, state: PageState) =>
      setMore((previous) => {
        const old = previous.key === listKey ? previous.states[index] : undefined;
        if (old && old.endCursor === state.endCursor && old.hasNextPage === state.hasNextPage && old.fetching === state.fetching) {
          return previous;
        }
        const base = previous.key === listKey ? previous : { key: listKey, pages: 0, states: {} };
        return { ...base, states: { ...base.states, [index]: state } };
      }),
    [listKey],
  );
  const loadMore = () =>
    setMore((previous) => {
      const base = previous.key === listKey ? previous : { key: listKey, pages: 0, states: {} };
      return { ...base, pages: base.pages + 1 };
    });

  const connection = data?.computeProfiles;
  const base = `/p/${project}/studio/profiles`;
  const addButton = (
    <Button component={Link} to={`${base}/new`} leftSection={<IconPlus size={16} />}>
      Add Compute Profile
    </Button>
  );

  const afterOf = (index: number): string | null | undefined =>
    index === 0 ? connection?.pageInfo.endCursor : extraStates[index - 1]?.endCursor;
  const lastState: PageState | undefined =
    extraPages === 0
      ? connection && { endCursor: connection.pageInfo.endCursor ?? null, hasNextPage: connection.pageInfo.hasNextPage, fetching }
      : extraStates[extraPages - 1];

  const rowProps = {
    base,
    onShare: (row: Row) => setSharing({ ...row, project }),
    onDelete: (row: Row) => setDeleting(row),
    onEdit: (row: Row) => navigate(`${base}/${row.id}/edit`),
  };

  let body;
  if (!connection && fetching) {
    body = <Loading label="Loading compute profiles" />;
  } else if (error && !connection) {
    body = <ErrorState message={describeError(error) ?? "Could not load the compute profiles."} onRetry={refresh} />;
  } else if (connection && connection.edges.length === 0) {
    body = debounced ? (
      <EmptyState title="No matching compute profiles">
        No profile's name, display name or description matches “{debounced}”.
      </EmptyState>
    ) : (
      <EmptyState title="No compute profiles yet" action={addButton}>
        A compute profile is a predefined configuration of CPU, GPU, memory and storage. Once added, your project's users
        see it in their catalog and launch compute instances from it.
      </EmptyState>
    );
  } else if (connection) {
    body = (
      <Stack gap="sm">
        <Table.ScrollContainer minWidth={900}>
          <Table verticalSpacing="sm" highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Unique Name</Table.Th>
                <Table.Th>Display Name</Table.Th>
                <Table.Th>Resources</Table.Th>
                <Table.Th>Created</Table.Th>
                <Table.Th>Sharing</Table.Th>
                <Table.Th w={60}>
                  <VisuallyHidden>Actions</VisuallyHidden>
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {connection.edges.map(({ node }) => (
                <ProfileRow key={node.id} row={node} {...rowProps} />
              ))}
            </Table.Tbody>
            {Array.from({ length: extraPages }, (_, index) => (
              <MoreProfiles
                key={index}
                index={index}
                project={project}
                search={debounced || null}
                after={afterOf(index)}
                refreshToken={refreshToken}
                onState={reportPage}
                rowProps={rowProps}
              />
            ))}
          </Table>
        </Table.ScrollContainer>
        <Group justify="space-between">
          <Text size="sm" c="dimmed">
            {connection.totalCount} compute profile{connection.totalCount === 1 ? "" : "s"}
          </Text>
          {lastState?.hasNextPage && (
            <Button variant="light" loading={lastState.fetching} onClick={loadMore}>
              Load more
            </Button>
          )}
        </Group>
      </Stack>
    );
  }

  return (
    <Stack>
      <Group justify="space-between" align="flex-end">
        <div>
          <Title order={2}>Compute Profiles</Title>
          <Text c="dimmed" size="sm">
            Predefined configurations of compute resources that your project's users launch as SKUs from the catalog.
          </Text>
        </div>
        {addButton}
      </Group>
      <TextInput
        aria-label="Search compute profiles"
        placeholder="Search by name, display name or description"
        leftSection={<IconSearch size={16} />}
        value={search}
        onChange={(event) => setSearch(event.currentTarget.value)}
        maw={420}
      />
      {body}
      <SharingModal kind="profile" target={sharing} onClose={() => setSharing(null)} onSaved={refresh} />
      <ConfirmDeleteModal
        opened={deleting !== null}
        title="Delete compute profile"
        message={
          <>
            Delete the compute profile <b>{deleting?.displayName || deleting?.name}</b> ({deleting?.name})? It is no
            longer available to end users; compute instances already launched from it are not affected.
          </>
        }
        onClose={() => setDeleting(null)}
        onConfirm={async () => {
          if (!deleting) return [];
          const result = await deleteProfile({ id: deleting.id });
          const payload = result.data?.deleteComputeProfile;
          if (result.error || !payload) return [describeError(result.error) ?? "Could not delete the compute profile."];
          if (payload.userErrors.length > 0) return payload.userErrors.map((e) => e.message);
          notifications.show({ color: "green", message: `Compute profile "${deleting.name}" deleted.` });
          refresh();
          return [];
        }}
      />
    </Stack>
  );
}

interface RowProps {
  base: string;
  onShare: (row: Row) => void;
  onDelete: (row: Row) => void;
  onEdit: (row: Row) => void;
}

function ProfileRow({ row, base, onShare, onDelete, onEdit }: RowProps & { row: Row }) {
  return (
    <Table.Tr>
      <Table.Td>
        <Anchor component={Link} to={`${base}/${row.id}`} fw={500}>
          {row.name}
        </Anchor>
        <Text size="xs" c="dimmed">
          {allocationLabel(row.allocationType)} · {row.environmentTemplate.displayName} {row.environmentTemplateVersion.version}
        </Text>
      </Table.Td>
      <Table.Td>{row.displayName}</Table.Td>
      <Table.Td>
        <ResourcesSummary resources={row.resources} />
      </Table.Td>
      <Table.Td>
        <Text size="sm">{formatDate(row.createdAt)}</Text>
      </Table.Td>
      <Table.Td>
        <SharingSummary sharing={row.sharing} />
      </Table.Td>
      <Table.Td>
        <Menu position="bottom-end" withinPortal>
          <Menu.Target>
            <ActionIcon variant="subtle" color="gray" aria-label={`Actions for ${row.name}`}>
              <IconDots size={18} />
            </ActionIcon>
          </Menu.Target>
          <Menu.Dropdown>
            <Menu.Item leftSection={<IconPencil size={14} />} onClick={() => onEdit(row)}>
              Edit
            </Menu.Item>
            <Menu.Item leftSection={<IconShare size={14} />} onClick={() => onShare(row)}>
              Manage Sharing
            </Menu.Item>
            <Menu.Divider />
            <Menu.Item color="red" leftSection={<IconTrash size={14} />} onClick={() => onDelete(row)}>
              Delete
            </Menu.Item>
          </Menu.Dropdown>
        </Menu>
      </Table.Td>
    </Table.Tr>
  );
}

/** One more page of rows (a tbody of its own), after the cursor the page before it ended with. */
function MoreProfiles({
  index,
  project,
  search,
  after,
  refreshToken,
  onState,
  rowProps,
}: {
  index: number;
  project: string;
  search: string | null;
  after: string | null | undefined;
  refreshToken: number;
  onState: (index: number, state: PageState) => void;
  rowProps: RowProps;
}) {
  const [{ data, fetching, error }, reexecute] = useQuery({
    query: ProfilesListDocument,
    variables: { project, search, first: PROFILES_PAGE_SIZE, after: after ?? null },
    pause: !after,
  });
  useEffect(() => {
    if (refreshToken > 0) reexecute({ requestPolicy: "network-only" });
  }, [refreshToken, reexecute]);
  const connection = data?.computeProfiles;
  useEffect(() => {
    onState(index, {
      endCursor: connection?.pageInfo.endCursor ?? null,
      hasNextPage: connection?.pageInfo.hasNextPage ?? false,
      fetching,
    });
  }, [index, connection, fetching, onState]);

  if (error && !connection) {
    return (
      <Table.Tbody>
        <Table.Tr>
          <Table.Td colSpan={6}>
            <ErrorState message={describeError(error) ?? "Could not load more profiles."} onRetry={() => reexecute({ requestPolicy: "network-only" })} />
          </Table.Td>
        </Table.Tr>
      </Table.Tbody>
    );
  }
  return (
    <Table.Tbody>
      {(connection?.edges ?? []).map(({ node }) => (
        <ProfileRow key={node.id} row={node} {...rowProps} />
      ))}
    </Table.Tbody>
  );
}
