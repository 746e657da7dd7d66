/* The SSH part of a service's Connect panel (the exact ssh command is its SSH port's Connect link,
 * which follows the service live): the host key's fingerprint to compare with what ssh shows the
 * first time, and the keys added to the service besides its owner's, which its owner and the
 * project's admins add and delete. */
import { Code, Group, Stack, Table, Text, Title, VisuallyHidden } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { useMutation } from "urql";

import { ConfirmButton } from "../../components/ConfirmButton";
import { SshKeyForm, type SshKeyAdded } from "../../components/SshKeyForm";
import { describeError } from "../../components/errors";
import { ServiceSshKeyAddDocument, ServiceSshKeyDeleteDocument } from "./queries";

export interface SshPanelService {
  id: string;
  sshAccess?: { port: string; user: string } | null;
  ssh?: { command: string; hostKeyFingerprint: string } | null;
  sshKeys?: readonly { id: string; name: string; keyType: string; fingerprint: string; createdAt: string }[];
}

export function SshPanel({ service, running, onChanged }: { service: SshPanelService; running: boolean; onChanged: () => void }) {
  const [{ fetching }, add] = useMutation(ServiceSshKeyAddDocument);
  const [, remove] = useMutation(ServiceSshKeyDeleteDocument);
  if (!service.sshAccess) return null;
  const keys = service.sshKeys ?? [];

  const submit = async (publicKey: string, name: string | null): Promise<SshKeyAdded> => {
    const result = await add({ input: { service: service.id, publicKey, name } });
    const payload = result.data?.addServiceInstanceSshKey;
    const key = payload?.sshKey;
    if (key) {
      notifications.show({ color: "green", title: "SSH key added", message: `${key.name} may log in now${running ? " (no restart)" : ""}.` });
      onChanged();
    }
    return { payload: payload && { userErrors: payload.userErrors, added: Boolean(key) }, error: result.error };
  };
  const drop = async (id: string, keyName: string) => {
    const result = await remove({ id });
    const payload = result.data?.deleteServiceInstanceSshKey;
    if (!payload || payload.userErrors.length) {
      const message = payload?.userErrors.map((e) => e.message).join("; ") || describeError(result.error) || "No answer from the server.";
      notifications.show({ color: "red", title: `Could not delete ${keyName}`, message });
      return;
    }
    notifications.show({ color: "green", title: "SSH key deleted", message: `${keyName} logs in no more.` });
    onChanged();
  };

  return (
    <Stack gap="sm" mt="md" data-testid="ssh-panel">
      <Title order={4}>SSH</Title>
      {/* The ssh command itself is the Connect link of its SSH port, above (live). */}
      {service.ssh ? (
        <Text size="xs" c="dimmed">
          Log in as {service.sshAccess.user} with the ssh command above. Its host key: <Code>{service.ssh.hostKeyFingerprint}</Code> (what ssh shows the first time; the same after every restart).
        </Text>
      ) : (
        <Text size="xs" c="dimmed">
          The ssh command appears above once the service is running (as {service.sshAccess.user}, on its {service.sshAccess.port} port).
        </Text>
      )}
      <Text size="xs" c="dimmed">
        Its owner&apos;s SSH keys (their account page) let them in, and so do the keys added here; changes reach a running service without a restart.
      </Text>
      {keys.length === 0 ? (
        <Text size="sm" c="dimmed" fs="italic">
          No keys added to this service.
        </Text>
      ) : (
        <Table verticalSpacing="xs" aria-label="Keys added to this service">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Fingerprint</Table.Th>
              <Table.Th>
                <VisuallyHidden>Actions</VisuallyHidden>
              </Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {keys.map((key) => (
              <Table.Tr key={key.id} data-testid={`service-ssh-key-${key.name}`}>
                <Table.Td>
                  <Text size="sm">{key.name}</Text>
                </Table.Td>
                <Table.Td>
                  <Code>{key.fingerprint}</Code>
                </Table.Td>
                <Table.Td>
                  <Group justify="flex-end">
                    <ConfirmButton
                      size="xs"
                      variant="subtle"
                      color="red"
                      label="Delete"
                      aria-label={`Delete ${key.name}`}
                      title={`Delete the key "${key.name}" from this service?`}
                      message="It can no longer log in to this service."
                      confirmLabel="Delete"
                      onConfirm={() => drop(key.id, key.name)}
                    />
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      <SshKeyForm
        keyLabel="Add a key to this service"
        keyDescription="One line of a .pub file (a colleague's, a CI job's): ssh-ed25519, ecdsa, or RSA of 2048 bits or more"
        nameLabel="Key name"
        submitLabel="Add key"
        size="xs"
        fetching={fetching}
        add={submit}
      />
    </Stack>
  );
}
