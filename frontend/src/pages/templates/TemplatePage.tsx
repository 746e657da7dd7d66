import {
  Alert,
  Anchor,
  Badge,
  Breadcrumbs,
  Button,
  Card,
  Code,
  Collapse,
  Group,
  ScrollArea,
  Select,
  Stack,
  Table,
  Text,
  Title,
  UnstyledButton,
} from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { IconChevronDown, IconChevronRight, IconCopy, IconInfoCircle, IconPencil, IconPlus, IconTrash } from "@tabler/icons-react";
import { useState } from "react";
import { Link, useNavigate, useParams } from "react-router-dom";
import { useMutation, useQuery } from "urql";

import { useProject } from "../../app/project";
import { describeError } from "../../components/errors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import type { EnvTemplateDetailQuery, VersionState } from "../../gql/graphql";
import { ConfirmDeleteModal } from "../profiles/ConfirmDeleteModal";
import { BuiltInBadge, stateLabel, useCanManage, VERSION_STATES, VersionStateBadge } from "./common";
import { EnvTemplateDeleteDocument, EnvTemplateDetailDocument, EnvTemplateSetVersionStateDocument } from "./operations";
import { EditTemplateModal } from "./TemplateFormModal";

type Template = NonNullable<EnvTemplateDetailQuery["environmentTemplate"]>;
type Version = Template["versions"][number];

/** Studio > Environment Templates > a template: its versions and their states. */
export function TemplatePage() {
  const { project } = useProject();
  const { id = "" } = useParams();
  const navigate = useNavigate();
  const canManage = useCanManage();
  const [{ data, fetching, error }, reexecute] = useQuery({ query: EnvTemplateDetailDocument, variables: { id } });
  const [editing, setEditing] = useState(false);
  const [deleteOpen, setDeleteOpen] = useState(false);
  const [, deleteTemplate] = useMutation(EnvTemplateDeleteDocument);
  const refresh = () => reexecute({ requestPolicy: "network-only" });
  const base = `/p/${project}/studio/templates`;

  const crumbs = (name?: string) => (
    <Breadcrumbs>
      <Anchor component={Link} to={base}>
        Environment Templates
      </Anchor>
      {name && <Text>{name}</Text>}
    </Breadcrumbs>
  );

  if (fetching && !data) return <Loading label="Loading the environment template" />;
  if (error && !data) {
    return (
      <Stack>
        {crumbs()}
        <ErrorState message={describeError(error) ?? "Could not load the environment template."} onRetry={refresh} />
      </Stack>
    );
  }
  const template = data?.environmentTemplate;
  if (!template) {
    return (
      <Stack>
        {crumbs()}
        <ErrorState message="This environment template does not exist (it may have been deleted), or you may not see it." />
      </Stack>
    );
  }
  const manageable = canManage(template);
  const addVersion = `${base}/${template.id}/versions/new`;

  return (
    <Stack>
      {crumbs(template.name)}
      <Group justify="space-between" align="flex-start">
        <div>
          <Group gap="xs">
            <Title order={2}>{template.displayName}</Title>
            {template.builtIn && <BuiltInBadge />}
          </Group>
          <Text c="dimmed" size="sm" ff="monospace">
            {template.name}
          </Text>
        </div>
        {manageable && (
          <Group gap="sm">
            <Button component={Link} to={addVersion} leftSection={<IconPlus size={16} />}>
              Add Version
            </Button>
            <Button variant="default" leftSection={<IconPencil size={16} />} onClick={() => setEditing(true)}>
              Edit
            </Button>
            {!template.builtIn && (
              <Button variant="light" color="red" leftSection={<IconTrash size={16} />} onClick={() => setDeleteOpen(true)}>
                Delete
              </Button>
            )}
          </Group>
        )}
      </Group>
      {template.description && <Text>{template.description}</Text>}
      <Group gap="xl">
        <Text size="sm" c="dimmed">
          Project: {template.builtIn ? "built-in (shipped with gpupaas)" : template.project.displayName || template.project.name}
        </Text>
        <Text size="sm" c="dimmed">
          Created {new Date(template.createdAt).toLocaleString()}
        </Text>
        <Text size="sm" c="dimmed">
          Updated {new Date(template.updatedAt).toLocaleString()}
        </Text>
      </Group>
      {!manageable && (
        <Alert color="blue" icon={<IconInfoCircle size={18} />}>
          {template.builtIn
            ? "A built-in template: every project may pin its active versions in compute profiles; only platform admins change it."
            : "You may not change this template."}
        </Alert>
      )}

      <Title order={3} mt="md">
        Versions
      </Title>
      {template.versions.length === 0 ? (
        <EmptyState
          title="No versions yet"
          action={
            manageable ? (
              <Button component={Link} to={addVersion} leftSection={<IconPlus size={16} />}>
                Add Version
              </Button>
            ) : undefined
          }
        >
          A version holds the Kubernetes manifests, the inputs users give and the outputs they see. Activate a version so
          that compute profiles can pin it.
        </EmptyState>
      ) : (
        <Stack gap="sm">
          {template.versions.map((version) => (
            <VersionCard
              key={version.id}
              version={version}
              manageable={manageable}
              copyTo={`${addVersion}?from=${encodeURIComponent(version.id)}`}
              onChanged={refresh}
            />
          ))}
        </Stack>
      )}

      <EditTemplateModal template={editing ? template : null} onClose={() => setEditing(false)} onSaved={refresh} />
      <ConfirmDeleteModal
        opened={deleteOpen}
        title="Delete environment template"
        message={
          <>
            Delete the environment template <b>{template.displayName}</b> ({template.name}) and all its versions? A template
            that compute profiles still use cannot be deleted.
          </>
        }
        onClose={() => setDeleteOpen(false)}
        onConfirm={async () => {
          const result = await deleteTemplate({ id: template.id });
          const payload = result.data?.deleteEnvironmentTemplate;
          if (result.error || !payload) return [describeError(result.error) ?? "Could not delete the template."];
          if (payload.userErrors.length > 0) return payload.userErrors.map((e) => e.message);
          notifications.show({ color: "green", message: `Environment template "${template.name}" deleted.` });
          navigate(base);
          return [];
        }}
      />
    </Stack>
  );
}

function VersionCard({
  version,
  manageable,
  copyTo,
  onChanged,
}: {
  version: Version;
  manageable: boolean;
  copyTo: string;
  onChanged: () => void;
}) {
  const [open, setOpen] = useState(false);
  const [{ fetching }, setState] = useMutation(EnvTemplateSetVersionStateDocument);
  const detailsId = `version-${version.id}-details`;

  async function changeState(state: VersionState) {
    if (state === version.state) return;
    const result = await setState({ id: version.id, state });
    const payload = result.data?.setEnvironmentTemplateVersionState;
    const problem = result.error
      ? describeError(result.error)
      : payload?.userErrors.length
        ? payload.userErrors.map((e) => e.message).join("; ")
        : null;
    if (problem || !payload) {
      notifications.show({ color: "red", title: `Version ${version.version} unchanged`, message: problem ?? "Could not change the state." });
      return;
    }
    notifications.show({ color: "green", message: `Version ${version.version} is now ${stateLabel(state)}.` });
    onChanged();
  }

  return (
    <Card withBorder radius="md" padding="md">
      <Group justify="space-between" wrap="wrap" gap="sm">
        <UnstyledButton onClick={() => setOpen((o) => !o)} aria-expanded={open} aria-controls={detailsId}>
          <Group gap="sm" wrap="nowrap">
            {open ? <IconChevronDown size={16} /> : <IconChevronRight size={16} />}
            <Text fw={600} ff="monospace">
              {version.version}
            </Text>
            <VersionStateBadge state={version.state} />
            <Text size="xs" c="dimmed">
              {version.inputs.length} input{version.inputs.length === 1 ? "" : "s"} · {version.outputs.length} output
              {version.outputs.length === 1 ? "" : "s"} · added {new Date(version.createdAt).toLocaleString()}
            </Text>
          </Group>
        </UnstyledButton>
        <Group gap="sm">
          {manageable && (
            <Select
              aria-label={`State of version ${version.version}`}
              size="xs"
              w={130}
              data={VERSION_STATES.map(({ value, label }) => ({ value, label }))}
              value={version.state}
              allowDeselect={false}
              disabled={fetching}
              onChange={(value) => value && void changeState(value as VersionState)}
            />
          )}
          {manageable && (
            <Button component={Link} to={copyTo} size="xs" variant="subtle" leftSection={<IconCopy size={14} />}>
              New version from this one
            </Button>
          )}
        </Group>
      </Group>
      <Collapse expanded={open}>
        <Stack gap="md" mt="md" id={detailsId}>
          <div>
            <Text fw={500} size="sm" mb={4}>
              Inputs
            </Text>
            {version.inputs.length === 0 ? (
              <Text size="sm" c="dimmed">
                None
              </Text>
            ) : (
              <Table.ScrollContainer minWidth={640}>
                <Table withTableBorder fz="sm">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Name</Table.Th>
                      <Table.Th>Type</Table.Th>
                      <Table.Th>Default</Table.Th>
                      <Table.Th>Rules</Table.Th>
                      <Table.Th>Description</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {version.inputs.map((input) => (
                      <Table.Tr key={input.name}>
                        <Table.Td>
                          <Code>{input.name}</Code>
                          {input.required && (
                            <Badge size="xs" ml={6} variant="light" color="orange">
                              required
                            </Badge>
                          )}
                          {input.sensitive && (
                            <Badge size="xs" ml={6} variant="light" color="red">
                              sensitive
                            </Badge>
                          )}
                        </Table.Td>
                        <Table.Td>{input.type}</Table.Td>
                        <Table.Td>{input.default ?? "—"}</Table.Td>
                        <Table.Td>
                          {[
                            input.options.length > 0 && `one of ${input.options.join(", ")}`,
                            input.pattern && `pattern ${input.pattern}`,
                            input.min != null && `min ${input.min}`,
                            input.max != null && `max ${input.max}`,
                          ]
                            .filter(Boolean)
                            .join(" · ") || "—"}
                        </Table.Td>
                        <Table.Td>{input.description ?? "—"}</Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </Table.ScrollContainer>
            )}
          </div>
          <div>
            <Text fw={500} size="sm" mb={4}>
              Outputs
            </Text>
            {version.outputs.length === 0 ? (
              <Text size="sm" c="dimmed">
                None
              </Text>
            ) : (
              <Table.ScrollContainer minWidth={560}>
                <Table withTableBorder fz="sm">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Name</Table.Th>
                      <Table.Th>Value</Table.Th>
                      <Table.Th>Description</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {version.outputs.map((output) => (
                      <Table.Tr key={output.name}>
                        <Table.Td>
                          <Code>{output.name}</Code>
                        </Table.Td>
                        <Table.Td>
                          <Code style={{ whiteSpace: "pre-wrap" }}>{output.value}</Code>
                        </Table.Td>
                        <Table.Td>{output.description ?? "—"}</Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </Table.ScrollContainer>
            )}
          </div>
          <div>
            <Text fw={500} size="sm" mb={4}>
              Resources
            </Text>
            {version.resources == null ? (
              <Text size="sm" c="dimmed">
                Hidden: only the owning project's admins see a template's manifests.
              </Text>
            ) : (
              <ScrollArea.Autosize mah={480} type="auto">
                <Code block>{version.resources}</Code>
              </ScrollArea.Autosize>
            )}
          </div>
        </Stack>
      </Collapse>
    </Card>
  );
}
