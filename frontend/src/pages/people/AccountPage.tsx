import { Alert, Badge, Button, Group, Modal, Paper, PasswordInput, Stack, Table, Text, TextInput, Title, VisuallyHidden } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { IconCheck, IconPlus } from "@tabler/icons-react";
import { useState } from "react";
import { useMutation, useQuery } from "urql";

import { useAuth } from "../../app/auth";
import { ConfirmButton } from "../../components/ConfirmButton";
import { FormErrors } from "../../components/FormErrors";
import { describeError, errorsByField } from "../../components/errors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import { SecretOnce, succeeded, when } from "./common";
import { SshKeys } from "./SshKeys";
import { ApiTokenCreateDocument, ApiTokenRevokeDocument, ApiTokensDocument, PasswordChangeDocument } from "./queries";

/** The caller's own account (everyone): change the password, manage SSH keys and API tokens. */
export function AccountPage() {
  const { me } = useAuth();
  return (
    <Stack gap="xl">
      <Stack gap={2}>
        <Title order={2}>Account</Title>
        <Group gap="xs">
          <Text c="dimmed" size="sm">
            Signed in as <b>{me?.username}</b>
          </Text>
          {me?.isPlatformAdmin && (
            <Badge size="sm" variant="light" color="grape">
              Platform admin
            </Badge>
          )}
        </Group>
      </Stack>
      <ChangePassword />
      <SshKeys />
      <ApiTokens />
    </Stack>
  );
}

function ChangePassword() {
  const [current, setCurrent] = useState("");
  const [password, setPassword] = useState("");
  const [repeat, setRepeat] = useState("");
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [done, setDone] = useState(false);
  const [{ fetching }, change] = useMutation(PasswordChangeDocument);

  const submit = async () => {
    setDone(false);
    if (password !== repeat) {
      setErrors({ repeat: "The two new passwords differ." });
      return;
    }
    const result = await change({ input: { currentPassword: current, newPassword: password } });
    const payload = result.data?.changePassword;
    if (!payload) {
      setErrors({ "": describeError(result.error) ?? "No answer from the server." });
      return;
    }
    if (payload.userErrors.length) {
      setErrors(errorsByField(payload.userErrors));
      return;
    }
    setErrors({});
    setCurrent("");
    setPassword("");
    setRepeat("");
    setDone(true);
  };

  return (
    <Paper withBorder p="md" component="section" aria-labelledby="change-password">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <Stack maw={420}>
          <Title order={3} id="change-password">
            Change password
          </Title>
          <PasswordInput label="Current password" required autoComplete="current-password" value={current} onChange={(e) => setCurrent(e.currentTarget.value)} error={errors.currentPassword} aria-invalid={Boolean(errors.currentPassword) || undefined} />
          <PasswordInput label="New password" required autoComplete="new-password" value={password} onChange={(e) => setPassword(e.currentTarget.value)} error={errors.newPassword} aria-invalid={Boolean(errors.newPassword) || undefined} />
          <PasswordInput label="Repeat the new password" required autoComplete="new-password" value={repeat} onChange={(e) => setRepeat(e.currentTarget.value)} error={errors.repeat} aria-invalid={Boolean(errors.repeat) || undefined} />
          <FormErrors title="The password was not changed" errors={errors} placed={["currentPassword", "newPassword", "repeat"]} />
          {done && (
            <Alert color="green" icon={<IconCheck size={18} />} title="Password changed" role="status">
              Sign in with the new password from now on; your other sessions (other browsers) were signed out. API tokens keep working.
            </Alert>
          )}
          <Group>
            <Button type="submit" loading={fetching}>
              Change password
            </Button>
          </Group>
        </Stack>
      </form>
    </Paper>
  );
}

function ApiTokens() {
  const [{ data, error }, refetch] = useQuery({ query: ApiTokensDocument, requestPolicy: "cache-and-network" });
  const reload = () => refetch({ requestPolicy: "network-only" });
  const [creating, setCreating] = useState(false);
  const [, revoke] = useMutation(ApiTokenRevokeDocument);

  const remove = async (id: string, name: string) => {
    const result = await revoke({ id });
    if (succeeded(`Could not revoke ${name}`, result.data?.revokeApiToken, result.error)) {
      notifications.show({ color: "green", title: "Token revoked", message: `${name} signs nobody in any more.` });
      reload();
    }
  };

  return (
    <Paper withBorder p="md" component="section" aria-labelledby="api-tokens">
      <Stack>
        <Group justify="space-between" align="flex-end">
          <Stack gap={2}>
            <Title order={3} id="api-tokens">
              API tokens
            </Title>
            <Text c="dimmed" size="sm">
              For scripts and the command line: send <code>Authorization: Bearer &lt;token&gt;</code>. A token acts as you, with your rights.
            </Text>
          </Stack>
          <Button leftSection={<IconPlus size={16} />} onClick={() => setCreating(true)}>
            Create Token
          </Button>
        </Group>
        {error && !data ? (
          <ErrorState message={describeError(error) ?? "Could not load your API tokens."} onRetry={reload} />
        ) : !data ? (
          <Loading label="Loading API tokens" />
        ) : data.apiTokens.length === 0 ? (
          <EmptyState title="No API tokens" />
        ) : (
          <Table.ScrollContainer minWidth={640}>
            <Table verticalSpacing="sm">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Name</Table.Th>
                  <Table.Th>Created</Table.Th>
                  <Table.Th>Last used</Table.Th>
                  <Table.Th>Expires</Table.Th>
                  <Table.Th>
                    <VisuallyHidden>Actions</VisuallyHidden>
                  </Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {data.apiTokens.map((token) => {
                  const expired = token.expiresAt !== null && token.expiresAt !== undefined && new Date(token.expiresAt) <= new Date();
                  return (
                    <Table.Tr key={token.id} data-testid={`token-${token.name}`}>
                      <Table.Td>
                        <Text size="sm" fw={500}>
                          {token.name}
                        </Text>
                      </Table.Td>
                      <Table.Td>
                        <Text size="sm">{when(token.createdAt)}</Text>
                      </Table.Td>
                      <Table.Td>
                        <Text size="sm">{when(token.lastUsedAt)}</Text>
                      </Table.Td>
                      <Table.Td>
                        <Group gap="xs">
                          <Text size="sm">{when(token.expiresAt)}</Text>
                          {expired && (
                            <Badge size="sm" color="red" variant="light">
                              Expired
                            </Badge>
                          )}
                        </Group>
                      </Table.Td>
                      <Table.Td>
                        <Group justify="flex-end">
                          <ConfirmButton
                            size="xs"
                            variant="subtle"
                            color="red"
                            label="Revoke"
                            aria-label={`Revoke ${token.name}`}
                            title={`Revoke the token "${token.name}"?`}
                            message="Whatever uses it stops being signed in at once. This cannot be undone."
                            confirmLabel="Revoke"
                            onConfirm={() => remove(token.id, token.name)}
                          />
                        </Group>
                      </Table.Td>
                    </Table.Tr>
                  );
                })}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </Stack>
      <CreateTokenModal opened={creating} onClose={() => setCreating(false)} onCreated={reload} />
    </Paper>
  );
}

/** The end of a day (yyyy-mm-dd, the browser's date input) in UTC: the token works through it. */
export function endOfDay(day: string): string | null {
  if (!day) return null;
  const next = new Date(`${day}T00:00:00Z`);
  if (Number.isNaN(next.getTime())) return null;
  next.setUTCDate(next.getUTCDate() + 1);
  return next.toISOString();
}

function CreateTokenModal({ opened, onClose, onCreated }: { opened: boolean; onClose: () => void; onCreated: () => void }) {
  const [name, setName] = useState("");
  const [expires, setExpires] = useState("");
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [secret, setSecret] = useState<string | null>(null);
  const [{ fetching }, create] = useMutation(ApiTokenCreateDocument);

  const close = () => {
    setName("");
    setExpires("");
    setErrors({});
    setSecret(null);
    onClose();
  };
  const submit = async () => {
    const result = await create({ input: { name: name.trim(), expiresAt: endOfDay(expires) } });
    const payload = result.data?.createApiToken;
    if (!payload) {
      setErrors({ "": describeError(result.error) ?? "No answer from the server." });
      return;
    }
    if (payload.userErrors.length || !payload.token) {
      setErrors(errorsByField(payload.userErrors));
      return;
    }
    setErrors({});
    setSecret(payload.token);
    onCreated();
  };

  return (
    <Modal opened={opened} onClose={close} title={secret ? "Token created" : "Create an API token"} centered size="lg">
      {secret ? (
        <SecretOnce secret={secret} onDone={close} title="Copy the token now">
          You will not see it again: gpupaas keeps only a hash of it. Lost, revoke it and create another.
        </SecretOnce>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void submit();
          }}
        >
          <Stack>
            <TextInput label="Name" description="Where it is used: a laptop, a CI job." required value={name} onChange={(e) => setName(e.currentTarget.value)} error={errors.name} />
            <TextInput
              type="date"
              label="Expires"
              description="Optional: it works through this day (UTC). Empty: until revoked."
              value={expires}
              onChange={(e) => setExpires(e.currentTarget.value)}
              error={errors.expiresAt}
            />
            <FormErrors title="The token was not created" errors={errors} placed={["name", "expiresAt"]} />
            <Group justify="flex-end">
              <Button variant="default" onClick={close}>
                Cancel
              </Button>
              <Button type="submit" loading={fetching}>
                Create Token
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </Modal>
  );
}
