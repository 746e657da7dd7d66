import { Badge, Button, Group, Paper, Select, Stack, Table, Text, TextInput, Title, VisuallyHidden } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { IconUserPlus } from "@tabler/icons-react";
import { useState } from "react";
import { useMutation, useQuery } from "urql";

import { useAuth } from "../../app/auth";
import { useProject } from "../../app/project";
import { ConfirmButton } from "../../components/ConfirmButton";
import { FormErrors } from "../../components/FormErrors";
import { describeError, errorsByField } from "../../components/errors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import type { Role } from "../../gql/graphql";
import { succeeded, when } from "./common";
import { MemberRemoveDocument, MemberSetDocument, ProjectMembersDocument } from "./queries";

export const ROLES: { value: Role; label: string }[] = [
  { value: "MEMBER", label: "Member" },
  { value: "ADMIN", label: "Admin" },
];

/** The project's members (its admins'): add someone with a role, change a role, remove someone. */
export function MembersPage() {
  const { project } = useProject();
  const auth = useAuth();
  const [{ data, error }, refetch] = useQuery({ query: ProjectMembersDocument, variables: { project }, requestPolicy: "cache-and-network" });
  const [busy, setBusy] = useState<string | null>(null);
  const [, setMember] = useMutation(MemberSetDocument);
  const [, removeMember] = useMutation(MemberRemoveDocument);
  const reload = (username?: string) => {
    refetch({ requestPolicy: "network-only" });
    // One's own role changed: what the studio offers changes with it.
    if (username && username === auth.me?.username) auth.refresh();
  };

  const changeRole = async (username: string, role: Role) => {
    setBusy(username);
    const result = await setMember({ input: { project, username, role } });
    setBusy(null);
    if (succeeded(`Could not change the role of ${username}`, result.data?.setProjectMember, result.error)) {
      notifications.show({ color: "green", title: "Role changed", message: `${username} is now ${role === "ADMIN" ? "an admin" : "a member"} of ${project}.` });
      reload(username);
    }
  };
  const remove = async (username: string) => {
    const result = await removeMember({ input: { project, username } });
    if (succeeded(`Could not remove ${username}`, result.data?.removeProjectMember, result.error)) {
      notifications.show({ color: "green", title: "Member removed", message: `${username} left ${project}; the instances they own stay, managed by the project's admins.` });
      reload(username);
    }
  };

  const members = data?.project?.members;
  return (
    <Stack>
      <Stack gap={2}>
        <Title order={2}>Members</Title>
        <Text c="dimmed" size="sm">
          Who may use {data?.project?.displayName || project}. Admins manage its studio, members and everyone's instances; members launch from its catalog.
        </Text>
      </Stack>
      <AddMemberForm project={project} onAdded={reload} />
      {error && !data ? (
        <ErrorState message={describeError(error) ?? "Could not load the members."} onRetry={() => reload()} />
      ) : !members ? (
        <Loading label="Loading members" />
      ) : members.length === 0 ? (
        <EmptyState title="No members yet">Add someone above.</EmptyState>
      ) : (
        <Table.ScrollContainer minWidth={640}>
          <Table verticalSpacing="sm">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Username</Table.Th>
                <Table.Th>Role</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Added</Table.Th>
                <Table.Th>
                  <VisuallyHidden>Actions</VisuallyHidden>
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {members.map((m) => (
                <Table.Tr key={m.username} data-testid={`member-${m.username}`}>
                  <Table.Td>
                    <Text size="sm" fw={500}>
                      {m.username}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <Select
                      aria-label={`Role of ${m.username}`}
                      size="xs"
                      w={130}
                      allowDeselect={false}
                      data={ROLES}
                      value={m.role}
                      disabled={busy === m.username}
                      onChange={(value) => value && value !== m.role && void changeRole(m.username, value as Role)}
                    />
                  </Table.Td>
                  <Table.Td>
                    {m.disabled ? (
                      <Badge color="red" variant="light">
                        Disabled
                      </Badge>
                    ) : (
                      <Badge color="green" variant="light">
                        Active
                      </Badge>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm">{when(m.addedAt)}</Text>
                  </Table.Td>
                  <Table.Td>
                    <Group justify="flex-end">
                      <ConfirmButton
                        size="xs"
                        variant="subtle"
                        color="red"
                        label="Remove"
                        aria-label={`Remove ${m.username}`}
                        title={`Remove ${m.username} from ${project}?`}
                        message={`${m.username} loses access to ${project} at once. The instances they own stay; the project's admins manage them until one gives them to someone else.`}
                        confirmLabel="Remove"
                        onConfirm={() => remove(m.username)}
                      />
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Stack>
  );
}

function AddMemberForm({ project, onAdded }: { project: string; onAdded: (username: string) => void }) {
  const [username, setUsername] = useState("");
  const [role, setRole] = useState<Role>("MEMBER");
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [{ fetching }, setMember] = useMutation(MemberSetDocument);
  const submit = async () => {
    const name = username.trim();
    const result = await setMember({ input: { project, username: name, role } });
    const payload = result.data?.setProjectMember;
    if (!payload) {
      setErrors({ "": describeError(result.error) ?? "No answer from the server." });
      return;
    }
    if (payload.userErrors.length) {
      setErrors(errorsByField(payload.userErrors));
      return;
    }
    setErrors({});
    setUsername("");
    setRole("MEMBER");
    notifications.show({ color: "green", title: "Member added", message: `${name} is ${role === "ADMIN" ? "an admin" : "a member"} of ${project}.` });
    onAdded(name);
  };
  return (
    <Paper withBorder p="md">
      <form
        aria-label="Add a member"
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <Stack gap="sm">
          <Group align="flex-start" wrap="wrap">
            <TextInput
              label="Username"
              description="An existing user (platform admins add users)."
              required
              autoComplete="off"
              w={260}
              value={username}
              onChange={(e) => setUsername(e.currentTarget.value)}
              error={errors.username}
            />
            <Select label="Role" description="Admins manage the project." w={160} allowDeselect={false} data={ROLES} value={role} onChange={(v) => v && setRole(v as Role)} error={errors.role} />
            <Button type="submit" mt={44} leftSection={<IconUserPlus size={16} />} loading={fetching}>
              Add Member
            </Button>
          </Group>
          <FormErrors title="The member was not added" errors={errors} placed={["username", "role"]} />
        </Stack>
      </form>
    </Paper>
  );
}
