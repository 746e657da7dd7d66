import { ActionIcon, Badge, Button, Checkbox, Group, Modal, PasswordInput, Stack, Table, Text, TextInput, Title, Tooltip, VisuallyHidden } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { notifications } from "@mantine/notifications";
import { IconKey, IconPlus, IconSearch } from "@tabler/icons-react";
import { useState } from "react";
import { useMutation, useQuery } from "urql";

import { useAuth } from "../../app/auth";
import { ConfirmButton } from "../../components/ConfirmButton";
import { FormErrors } from "../../components/FormErrors";
import { describeError, errorsByField } from "../../components/errors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import { succeeded, when } from "./common";
import { PasswordResetDocument, UserCreateDocument, UserDeleteDocument, UserSetDisabledDocument, UsersListDocument } from "./queries";

export const USERS_PAGE = 25;

/** Every user of the installation (platform admins): search by name, page through, add one,
 * disable or enable, reset a password, delete. */
export function UsersPage() {
  const { me } = useAuth();
  const [search, setSearch] = useState("");
  const [debounced] = useDebouncedValue(search.trim(), 300);
  // The cursors of the pages before the one shown.
  const [cursors, setCursors] = useState<(string | null)[]>([]);
  const [after, setAfter] = useState<string | null>(null);
  const [{ data, error, fetching }, refetch] = useQuery({
    query: UsersListDocument,
    variables: { search: debounced || null, first: USERS_PAGE, after },
    requestPolicy: "cache-and-network",
  });
  const reload = () => refetch({ requestPolicy: "network-only" });
  const [creating, setCreating] = useState(false);
  const [resetting, setResetting] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [, setDisabled] = useMutation(UserSetDisabledDocument);
  const [, deleteUser] = useMutation(UserDeleteDocument);

  const onSearch = (value: string) => {
    setSearch(value);
    setCursors([]);
    setAfter(null);
  };
  const toggle = async (username: string, disabled: boolean) => {
    setBusy(username);
    const result = await setDisabled({ input: { username, disabled } });
    setBusy(null);
    if (succeeded(`Could not ${disabled ? "disable" : "enable"} ${username}`, result.data?.setUserDisabled, result.error)) {
      notifications.show({
        color: "green",
        title: disabled ? `${username} disabled` : `${username} enabled`,
        message: disabled ? "Their sessions and API tokens stopped working." : "They may sign in again.",
      });
      reload();
    }
  };
  const remove = async (username: string) => {
    const result = await deleteUser({ username });
    if (succeeded(`Could not delete ${username}`, result.data?.deleteUser, result.error)) {
      notifications.show({ color: "green", title: "User deleted", message: username });
      reload();
    }
  };

  const connection = data?.users;
  return (
    <Stack>
      <Group justify="space-between" align="flex-end">
        <Stack gap={2}>
          <Title order={2}>Users</Title>
          <Text c="dimmed" size="sm">
            Everyone who may sign in. Add people to projects from each project's Members page.
          </Text>
        </Stack>
        <Button leftSection={<IconPlus size={16} />} onClick={() => setCreating(true)}>
          Add User
        </Button>
      </Group>
      <TextInput
        label="Search"
        placeholder="Part of a username"
        leftSection={<IconSearch size={16} />}
        value={search}
        onChange={(e) => onSearch(e.currentTarget.value)}
        maw={360}
      />
      {error && !data ? (
        <ErrorState message={describeError(error) ?? "Could not load the users."} onRetry={reload} />
      ) : !connection ? (
        <Loading label="Loading users" />
      ) : connection.edges.length === 0 ? (
        <EmptyState title={debounced ? `No user matches "${debounced}"` : "No users yet"} />
      ) : (
        <>
          <Text size="sm" c="dimmed" aria-live="polite">
            {connection.totalCount} {connection.totalCount === 1 ? "user" : "users"}
            {debounced ? ` matching "${debounced}"` : ""}
          </Text>
          <Table.ScrollContainer minWidth={900}>
            <Table verticalSpacing="sm">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Username</Table.Th>
                  <Table.Th>Projects</Table.Th>
                  <Table.Th>Status</Table.Th>
                  <Table.Th>Created</Table.Th>
                  <Table.Th>Last sign-in</Table.Th>
                  <Table.Th>
                    <VisuallyHidden>Actions</VisuallyHidden>
                  </Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {connection.edges.map(({ node: user }) => {
                  const self = user.username === me?.username;
                  return (
                    <Table.Tr key={user.id} data-testid={`user-${user.username}`}>
                      <Table.Td>
                        <Group gap="xs" wrap="nowrap">
                          <Text size="sm" fw={500}>
                            {user.username}
                          </Text>
                          {user.isPlatformAdmin && (
                            <Badge size="sm" variant="light" color="grape">
                              Platform admin
                            </Badge>
                          )}
                        </Group>
                      </Table.Td>
                      <Table.Td>
                        <Group gap={4}>
                          {user.memberships.length === 0 && (
                            <Text size="sm" c="dimmed">
                              None
                            </Text>
                          )}
                          {user.memberships.map((m) => (
                            <Badge key={m.project.id} size="sm" variant="outline" color={m.role === "ADMIN" ? "blue" : "gray"}>
                              {m.project.name} · {m.role === "ADMIN" ? "admin" : "member"}
                            </Badge>
                          ))}
                        </Group>
                      </Table.Td>
                      <Table.Td>
                        <Badge color={user.disabled ? "red" : "green"} variant="light">
                          {user.disabled ? "Disabled" : "Active"}
                        </Badge>
                      </Table.Td>
                      <Table.Td>
                        <Text size="sm">{when(user.createdAt)}</Text>
                      </Table.Td>
                      <Table.Td>
                        <Text size="sm">{when(user.lastSignInAt)}</Text>
                      </Table.Td>
                      <Table.Td>
                        <Group gap={4} justify="flex-end" wrap="nowrap">
                          <Tooltip label="Reset the password">
                            <ActionIcon variant="subtle" aria-label={`Reset the password of ${user.username}`} onClick={() => setResetting(user.username)}>
                              <IconKey size={16} />
                            </ActionIcon>
                          </Tooltip>
                          <Button
                            size="xs"
                            variant="subtle"
                            color={user.disabled ? "green" : "orange"}
                            disabled={self}
                            title={self ? "You cannot disable yourself" : undefined}
                            loading={busy === user.username}
                            aria-label={`${user.disabled ? "Enable" : "Disable"} ${user.username}`}
                            onClick={() => void toggle(user.username, !user.disabled)}
                          >
                            {user.disabled ? "Enable" : "Disable"}
                          </Button>
                          <ConfirmButton
                            size="xs"
                            variant="subtle"
                            color="red"
                            label="Delete"
                            aria-label={`Delete ${user.username}`}
                            disabled={self}
                            title={`Delete user "${user.username}"?`}
                            message={`${user.username} can no longer sign in, their API tokens and sessions stop at once, and they leave every project. This cannot be undone.`}
                            confirmLabel="Delete"
                            onConfirm={() => remove(user.username)}
                          />
                        </Group>
                      </Table.Td>
                    </Table.Tr>
                  );
                })}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          <Group justify="flex-end">
            <Button
              variant="default"
              size="xs"
              disabled={cursors.length === 0 || fetching}
              onClick={() => {
                setAfter(cursors[cursors.length - 1] ?? null);
                setCursors(cursors.slice(0, -1));
              }}
            >
              Previous page
            </Button>
            <Button
              variant="default"
              size="xs"
              disabled={!connection.pageInfo.hasNextPage || fetching}
              onClick={() => {
                setCursors([...cursors, after]);
                setAfter(connection.pageInfo.endCursor ?? null);
              }}
            >
              Next page
            </Button>
          </Group>
        </>
      )}
      <CreateUserModal opened={creating} onClose={() => setCreating(false)} onCreated={reload} />
      <ResetPasswordModal username={resetting} onClose={() => setResetting(null)} />
    </Stack>
  );
}

function CreateUserModal({ opened, onClose, onCreated }: { opened: boolean; onClose: () => void; onCreated: () => void }) {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [platformAdmin, setPlatformAdmin] = useState(false);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [{ fetching }, create] = useMutation(UserCreateDocument);

  const close = () => {
    setUsername("");
    setPassword("");
    setPlatformAdmin(false);
    setErrors({});
    onClose();
  };
  const submit = async () => {
    const result = await create({ input: { username: username.trim(), password, isPlatformAdmin: platformAdmin } });
    const payload = result.data?.createUser;
    if (!payload) {
      setErrors({ "": describeError(result.error) ?? "No answer from the server." });
      return;
    }
    if (payload.userErrors.length) {
      setErrors(errorsByField(payload.userErrors));
      return;
    }
    notifications.show({ color: "green", title: "User added", message: `${username.trim()} may sign in now; add them to a project from its Members page.` });
    onCreated();
    close();
  };

  return (
    <Modal opened={opened} onClose={close} title="Add a user" centered>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <Stack>
          <TextInput label="Username" required autoComplete="off" value={username} onChange={(e) => setUsername(e.currentTarget.value)} error={errors.username} />
          <PasswordInput
            label="Password"
            description="Give it to them over a safe channel; they can change it on their Account page."
            required
            autoComplete="new-password"
            value={password}
            onChange={(e) => setPassword(e.currentTarget.value)}
            error={errors.password} aria-invalid={Boolean(errors.password) || undefined}
          />
          <Checkbox
            label="Platform admin"
            description="May do everything, in every project."
            checked={platformAdmin}
            onChange={(e) => setPlatformAdmin(e.currentTarget.checked)}
            error={errors.isPlatformAdmin}
          />
          <FormErrors title="The user was not added" errors={errors} placed={["username", "password", "isPlatformAdmin"]} />
          <Group justify="flex-end">
            <Button variant="default" onClick={close}>
              Cancel
            </Button>
            <Button type="submit" loading={fetching}>
              Add User
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

function ResetPasswordModal({ username, onClose }: { username: string | null; onClose: () => void }) {
  const [password, setPassword] = useState("");
  const [repeat, setRepeat] = useState("");
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [{ fetching }, reset] = useMutation(PasswordResetDocument);

  const close = () => {
    setPassword("");
    setRepeat("");
    setErrors({});
    onClose();
  };
  const submit = async () => {
    if (!username) return;
    if (password !== repeat) {
      setErrors({ repeat: "The two passwords differ." });
      return;
    }
    const result = await reset({ input: { username, newPassword: password } });
    const payload = result.data?.resetPassword;
    if (!payload) {
      setErrors({ "": describeError(result.error) ?? "No answer from the server." });
      return;
    }
    if (payload.userErrors.length) {
      setErrors(errorsByField(payload.userErrors));
      return;
    }
    notifications.show({ color: "green", title: "Password reset", message: `Their sessions were signed out; give ${username} the new password over a safe channel.` });
    close();
  };

  return (
    <Modal opened={username !== null} onClose={close} title={`Reset the password of ${username ?? ""}`} centered>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <Stack>
          <PasswordInput label="New password" required autoComplete="new-password" value={password} onChange={(e) => setPassword(e.currentTarget.value)} error={errors.newPassword} aria-invalid={Boolean(errors.newPassword) || undefined} />
          <PasswordInput label="Repeat the new password" required autoComplete="new-password" value={repeat} onChange={(e) => setRepeat(e.currentTarget.value)} error={errors.repeat} aria-invalid={Boolean(errors.repeat) || undefined} />
          <FormErrors title="The password was not reset" errors={errors} placed={["newPassword", "repeat"]} />
          <Group justify="flex-end">
            <Button variant="default" onClick={close}>
              Cancel
            </Button>
            <Button type="submit" loading={fetching}>
              Reset password
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
