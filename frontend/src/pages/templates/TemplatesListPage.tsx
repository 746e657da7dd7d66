import { ActionIcon, Anchor, Button, Group, Menu, Stack, Table, Text, TextInput, Title, VisuallyHidden } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { notifications } from "@mantine/notifications";
import { IconDots, IconEye, IconPlus, IconSearch, IconTrash, IconVersions } from "@tabler/icons-react";
import { useState } from "react";
import { Link, useNavigate } from "react-router-dom";
import { useMutation, useQuery } from "urql";

import { useProject } from "../../app/project";
import { describeError } from "../../components/errors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import type { EnvTemplatesListQuery } from "../../gql/graphql";
import { ConfirmDeleteModal } from "../profiles/ConfirmDeleteModal";
import { BuiltInBadge, useCanManage, VersionStateBadge } from "./common";
import { EnvTemplateDeleteDocument, EnvTemplatesListDocument } from "./operations";
import { CreateTemplateModal } from "./TemplateFormModal";

type Row = EnvTemplatesListQuery["environmentTemplates"][number];

const SHOWN_VERSIONS = 4;

/** Studio > Environment Templates: the project's templates and the built-in ones, with their versions. */
export function TemplatesListPage() {
  const { project } = useProject();
  const navigate = useNavigate();
  const canManage = useCanManage();
  const [search, setSearch] = useState("");
  const [debounced] = useDebouncedValue(search.trim(), 300);
  const [{ data, fetching, error }, reexecute] = useQuery({
    query: EnvTemplatesListDocument,
    variables: { project, search: debounced || null },
  });
  const [creating, setCreating] = useState(false);
  const [deleting, setDeleting] = useState<Row | null>(null);
  const [, deleteTemplate] = useMutation(EnvTemplateDeleteDocument);
  const refresh = () => reexecute({ requestPolicy: "network-only" });
  const base = `/p/${project}/studio/templates`;

  const addButton = (
    <Button leftSection={<IconPlus size={16} />} onClick={() => setCreating(true)}>
      Add Environment Template
    </Button>
  );

  const templates = data?.environmentTemplates;
  let body;
  if (!templates && fetching) body = <Loading label="Loading environment templates" />;
  else if (error && !templates) {
    body = <ErrorState message={describeError(error) ?? "Could not load the environment templates."} onRetry={refresh} />;
  } else if (templates && templates.length === 0) {
    body = debounced ? (
      <EmptyState title="No matching environment templates">No template's name or description matches “{debounced}”.</EmptyState>
    ) : (
      <EmptyState title="No environment templates yet" action={addButton}>
        An environment template is the infrastructure as code (Kubernetes manifests with inputs and outputs) that
        creates each compute instance of a profile.
      </EmptyState>
    );
  } else if (templates) {
    body = (
      <Table.ScrollContainer minWidth={820}>
        <Table verticalSpacing="sm" highlightOnHover>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Template</Table.Th>
              <Table.Th>Description</Table.Th>
              <Table.Th>Versions</Table.Th>
              <Table.Th>Updated</Table.Th>
              <Table.Th w={60}>
                <VisuallyHidden>Actions</VisuallyHidden>
              </Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {templates.map((t) => {
              const manageable = canManage(t);
              return (
                <Table.Tr key={t.id}>
                  <Table.Td>
                    <Group gap={6} wrap="nowrap">
                      <Anchor component={Link} to={`${base}/${t.id}`} fw={500}>
                        {t.displayName}
                      </Anchor>
                      {t.builtIn && <BuiltInBadge />}
                    </Group>
                    <Text size="xs" c="dimmed" ff="monospace">
                      {t.name}
                    </Text>
                  </Table.Td>
                  <Table.Td maw={360}>
                    <Text size="sm" lineClamp={2}>
                      {t.description || "—"}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    {t.versions.length === 0 ? (
                      <Text size="sm" c="dimmed">
                        No versions yet
                      </Text>
                    ) : (
                      <Group gap={4}>
                        {t.versions.slice(0, SHOWN_VERSIONS).map((v) => (
                          <VersionStateBadge key={v.id} state={v.state} version={v.version} />
                        ))}
                        {t.versions.length > SHOWN_VERSIONS && (
                          <Text size="xs" c="dimmed">
                            +{t.versions.length - SHOWN_VERSIONS} more
                          </Text>
                        )}
                      </Group>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm">{new Date(t.updatedAt).toLocaleString()}</Text>
                  </Table.Td>
                  <Table.Td>
                    <Menu position="bottom-end" withinPortal>
                      <Menu.Target>
                        <ActionIcon variant="subtle" color="gray" aria-label={`Actions for ${t.name}`}>
                          <IconDots size={18} />
                        </ActionIcon>
                      </Menu.Target>
                      <Menu.Dropdown>
                        <Menu.Item leftSection={<IconEye size={14} />} onClick={() => navigate(`${base}/${t.id}`)}>
                          Open
                        </Menu.Item>
                        {manageable && (
                          <Menu.Item leftSection={<IconVersions size={14} />} onClick={() => navigate(`${base}/${t.id}/versions/new`)}>
                            Add Version
                          </Menu.Item>
                        )}
                        {manageable && !t.builtIn && (
                          <>
                            <Menu.Divider />
                            <Menu.Item color="red" leftSection={<IconTrash size={14} />} onClick={() => setDeleting(t)}>
                              Delete
                            </Menu.Item>
                          </>
                        )}
                      </Menu.Dropdown>
                    </Menu>
                  </Table.Td>
                </Table.Tr>
              );
            })}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
    );
  }

  return (
    <Stack>
      <Group justify="space-between" align="flex-end">
        <div>
          <Title order={2}>Environment Templates</Title>
          <Text c="dimmed" size="sm">
            Versioned infrastructure as code that compute profiles run to create each compute instance.
          </Text>
        </div>
        {addButton}
      </Group>
      <TextInput
        aria-label="Search environment templates"
        placeholder="Search by name, display name or description"
        leftSection={<IconSearch size={16} />}
        value={search}
        onChange={(event) => setSearch(event.currentTarget.value)}
        maw={420}
      />
      {body}
      <CreateTemplateModal opened={creating} project={project} onClose={() => setCreating(false)} />
      <ConfirmDeleteModal
        opened={deleting !== null}
        title="Delete environment template"
        message={
          <>
            Delete the environment template <b>{deleting?.displayName}</b> ({deleting?.name}) and all its versions? A
            template that compute profiles still use cannot be deleted.
          </>
        }
        onClose={() => setDeleting(null)}
        onConfirm={async () => {
          if (!deleting) return [];
          const result = await deleteTemplate({ id: deleting.id });
          const payload = result.data?.deleteEnvironmentTemplate;
          if (result.error || !payload) return [describeError(result.error) ?? "Could not delete the template."];
          if (payload.userErrors.length > 0) return payload.userErrors.map((e) => e.message);
          notifications.show({ color: "green", message: `Environment template "${deleting.name}" deleted.` });
          refresh();
          return [];
        }}
      />
    </Stack>
  );
}
