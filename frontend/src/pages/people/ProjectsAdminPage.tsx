import { ActionIcon, Alert, Button, CloseButton, Group, Modal, Stack, Table, Text, TextInput, Title, Tooltip, VisuallyHidden } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { IconAlertTriangle, IconPencil, IconPlus, IconUsers } from "@tabler/icons-react";
import { useState } from "react";
import { Link, useNavigate } from "react-router-dom";
import { useMutation, useQuery } from "urql";

import { useAuth } from "../../app/auth";
import { useProject } from "../../app/project";
import { ConfirmButton } from "../../components/ConfirmButton";
import { FormErrors } from "../../components/FormErrors";
import { describeError, errorsByField } from "../../components/errors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import { AdminProjectsDocument, ProjectCreateDocument, ProjectDeleteDocument, ProjectRenameDocument } from "./queries";

/** The built-in project (global templates): the server never deletes it. */
const SYSTEM_PROJECT = "gpupaas-system";

/** Every project (platform admins): add one, rename one, delete one (refused while it has
 * instances: the server says so and the page shows it). */
export function ProjectsAdminPage() {
  const { project: current } = useProject();
  const auth = useAuth();
  const navigate = useNavigate();
  const [{ data, error }, refetch] = useQuery({ query: AdminProjectsDocument, requestPolicy: "cache-and-network" });
  const [creating, setCreating] = useState(false);
  const [renaming, setRenaming] = useState<{ name: string; displayName: string } | null>(null);
  const [refusal, setRefusal] = useState<{ name: string; message: string } | null>(null);
  const [, deleteProject] = useMutation(ProjectDeleteDocument);
  // The project switcher lists projects too: refresh it with this list.
  const reload = () => {
    refetch({ requestPolicy: "network-only" });
    auth.refresh();
  };

  const remove = async (name: string) => {
    setRefusal(null);
    const result = await deleteProject({ name });
    const payload = result.data?.deleteProject;
    if (!payload || payload.userErrors.length) {
      setRefusal({ name, message: payload?.userErrors.map((e) => e.message).join("; ") || describeError(result.error) || "No answer from the server." });
      return;
    }
    notifications.show({ color: "green", title: "Project deleted", message: name });
    if (name === current) {
      navigate("/");
      auth.refresh();
      return;
    }
    reload();
  };

  return (
    <Stack>
      <Group justify="space-between" align="flex-end">
        <Stack gap={2}>
          <Title order={2}>Projects</Title>
          <Text c="dimmed" size="sm">
            Every project of the installation. A project with compute or service instances cannot be deleted until they are.
          </Text>
        </Stack>
        <Button leftSection={<IconPlus size={16} />} onClick={() => setCreating(true)}>
          Add Project
        </Button>
      </Group>
      {refusal && (
        <Alert color="red" icon={<IconAlertTriangle size={18} />} title={`Project "${refusal.name}" was not deleted`} role="alert">
          <Group justify="space-between" wrap="nowrap" align="flex-start">
            <Text size="sm">{refusal.message}</Text>
            <CloseButton aria-label="Dismiss" onClick={() => setRefusal(null)} />
          </Group>
        </Alert>
      )}
      {error && !data ? (
        <ErrorState message={describeError(error) ?? "Could not load the projects."} onRetry={reload} />
      ) : !data ? (
        <Loading label="Loading projects" />
      ) : data.projects.length === 0 ? (
        <EmptyState title="No projects yet" />
      ) : (
        <Table.ScrollContainer minWidth={760}>
          <Table verticalSpacing="sm">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Display name</Table.Th>
                <Table.Th>Instances</Table.Th>
                <Table.Th>Members</Table.Th>
                <Table.Th>
                  <VisuallyHidden>Actions</VisuallyHidden>
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {data.projects.map((p) => (
                <Table.Tr key={p.id} data-testid={`project-${p.name}`}>
                  <Table.Td>
                    <Text size="sm" ff="monospace">
                      {p.name}
                    </Text>
                  </Table.Td>
                  <Table.Td>{p.displayName}</Table.Td>
                  <Table.Td>{p.instanceCount}</Table.Td>
                  <Table.Td>{p.members.length}</Table.Td>
                  <Table.Td>
                    <Group gap={4} justify="flex-end" wrap="nowrap">
                      <Tooltip label="Members">
                        <ActionIcon variant="subtle" component={Link} to={`/p/${p.name}/studio/members`} aria-label={`Members of ${p.name}`}>
                          <IconUsers size={16} />
                        </ActionIcon>
                      </Tooltip>
                      <Tooltip label="Rename">
                        <ActionIcon variant="subtle" aria-label={`Rename ${p.name}`} onClick={() => setRenaming({ name: p.name, displayName: p.displayName })}>
                          <IconPencil size={16} />
                        </ActionIcon>
                      </Tooltip>
                      <ConfirmButton
                        size="xs"
                        variant="subtle"
                        color="red"
                        label="Delete"
                        aria-label={`Delete ${p.name}`}
                        disabled={p.name === SYSTEM_PROJECT}
                        title={`Delete project "${p.name}"?`}
                        message={
                          p.instanceCount > 0
                            ? `${p.name} still has ${p.instanceCount} instance${p.instanceCount === 1 ? "" : "s"}: the server will refuse until they are deleted.`
                            : `${p.name}, its templates, profiles, webhooks, schedules and memberships are deleted. This cannot be undone.`
                        }
                        confirmLabel="Delete"
                        onConfirm={() => remove(p.name)}
                      />
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      <CreateProjectModal opened={creating} onClose={() => setCreating(false)} onCreated={reload} />
      <RenameProjectModal project={renaming} onClose={() => setRenaming(null)} onRenamed={reload} />
    </Stack>
  );
}

function CreateProjectModal({ opened, onClose, onCreated }: { opened: boolean; onClose: () => void; onCreated: () => void }) {
  const [name, setName] = useState("");
  const [displayName, setDisplayName] = useState("");
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [{ fetching }, create] = useMutation(ProjectCreateDocument);

  const close = () => {
    setName("");
    setDisplayName("");
    setErrors({});
    onClose();
  };
  const submit = async () => {
    const result = await create({ input: { name: name.trim(), displayName: displayName.trim() || null } });
    const payload = result.data?.createProject;
    if (!payload) {
      setErrors({ "": describeError(result.error) ?? "No answer from the server." });
      return;
    }
    if (payload.userErrors.length) {
      setErrors(errorsByField(payload.userErrors));
      return;
    }
    notifications.show({ color: "green", title: "Project added", message: `${name.trim()}: add its members from its Members page.` });
    onCreated();
    close();
  };

  return (
    <Modal opened={opened} onClose={close} title="Add a project" centered>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <Stack>
          <TextInput
            label="Name"
            description="Lowercase letters, digits and dashes; it is part of URLs and cannot be changed."
            required
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
            error={errors.name}
          />
          <TextInput label="Display name" description="Optional; the name when empty." value={displayName} onChange={(e) => setDisplayName(e.currentTarget.value)} error={errors.displayName} />
          <FormErrors title="The project was not added" errors={errors} placed={["name", "displayName"]} />
          <Group justify="flex-end">
            <Button variant="default" onClick={close}>
              Cancel
            </Button>
            <Button type="submit" loading={fetching}>
              Add Project
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

function RenameProjectModal({ project, onClose, onRenamed }: { project: { name: string; displayName: string } | null; onClose: () => void; onRenamed: () => void }) {
  // The form starts from the project's display name each time it opens (keyed by the caller).
  return (
    <Modal opened={project !== null} onClose={onClose} title={`Rename ${project?.name ?? ""}`} centered>
      {project && <RenameForm key={project.name} project={project} onClose={onClose} onRenamed={onRenamed} />}
    </Modal>
  );
}

function RenameForm({ project, onClose, onRenamed }: { project: { name: string; displayName: string }; onClose: () => void; onRenamed: () => void }) {
  const [displayName, setDisplayName] = useState(project.displayName);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [{ fetching }, rename] = useMutation(ProjectRenameDocument);
  const submit = async () => {
    const result = await rename({ input: { project: project.name, displayName: displayName.trim() } });
    const payload = result.data?.renameProject;
    if (!payload) {
      setErrors({ "": describeError(result.error) ?? "No answer from the server." });
      return;
    }
    if (payload.userErrors.length) {
      setErrors(errorsByField(payload.userErrors));
      return;
    }
    onRenamed();
    onClose();
  };
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      <Stack>
        <TextInput label="Display name" required data-autofocus value={displayName} onChange={(e) => setDisplayName(e.currentTarget.value)} error={errors.displayName} />
        <FormErrors title="The project was not renamed" errors={errors} placed={["displayName"]} />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button type="submit" loading={fetching}>
            Rename
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
