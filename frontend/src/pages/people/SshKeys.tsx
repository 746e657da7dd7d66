import { Code, Group, Paper, Stack, Table, Text, Title, VisuallyHidden } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { useMutation, useQuery } from "urql";

import { ConfirmButton } from "../../components/ConfirmButton";
import { SshKeyForm, type SshKeyAdded } from "../../components/SshKeyForm";
import { describeError } from "../../components/errors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import { succeeded, when } from "./common";
import { SshPublicKeyAddDocument, SshPublicKeyDeleteDocument, SshPublicKeysDocument } from "./queries";

/** The caller's SSH public keys: they let them into every service instance with SSH access they own. */
export function SshKeys() {
  const [{ data, error }, refetch] = useQuery({ query: SshPublicKeysDocument, requestPolicy: "cache-and-network" });
  const reload = () => refetch({ requestPolicy: "network-only" });
  const [{ fetching }, add] = useMutation(SshPublicKeyAddDocument);
  const [, remove] = useMutation(SshPublicKeyDeleteDocument);

  const submit = async (publicKey: string, name: string | null): Promise<SshKeyAdded> => {
    const result = await add({ input: { publicKey, name } });
    const payload = result.data?.addSshPublicKey;
    const key = payload?.sshPublicKey;
    if (key) {
      notifications.show({ color: "green", title: "SSH key added", message: `${key.name} (${key.fingerprint}) lets you into your services.` });
      reload();
    }
    return { payload: payload && { userErrors: payload.userErrors, added: Boolean(key) }, error: result.error };
  };
  const drop = async (id: string, keyName: string) => {
    const result = await remove({ id });
    if (succeeded(`Could not delete ${keyName}`, result.data?.deleteSshPublicKey, result.error)) {
      notifications.show({ color: "green", title: "SSH key deleted", message: `${keyName} lets nobody in any more.` });
      reload();
    }
  };

  return (
    <Paper withBorder p="md" component="section" aria-labelledby="ssh-keys">
      <Stack>
        <Stack gap={2}>
          <Title order={3} id="ssh-keys">
            SSH keys
          </Title>
          <Text c="dimmed" size="sm">
            They let you in to every service instance with SSH access that you own (applied to running ones without a restart). Paste one line of a <code>.pub</code> file.
          </Text>
        </Stack>
        {error && !data ? (
          <ErrorState message={describeError(error) ?? "Could not load your SSH keys."} onRetry={reload} />
        ) : !data ? (
          <Loading label="Loading SSH keys" />
        ) : data.sshPublicKeys.length === 0 ? (
          <EmptyState title="No SSH keys" />
        ) : (
          <Table.ScrollContainer minWidth={640}>
            <Table verticalSpacing="sm">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Name</Table.Th>
                  <Table.Th>Type</Table.Th>
                  <Table.Th>Fingerprint</Table.Th>
                  <Table.Th>Added</Table.Th>
                  <Table.Th>
                    <VisuallyHidden>Actions</VisuallyHidden>
                  </Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {data.sshPublicKeys.map((key) => (
                  <Table.Tr key={key.id} data-testid={`ssh-key-${key.name}`}>
                    <Table.Td>
                      <Text size="sm" fw={500}>
                        {key.name}
                      </Text>
                    </Table.Td>
                    <Table.Td>
                      <Text size="sm">
                        {key.keyType} ({key.bits} bits)
                      </Text>
                    </Table.Td>
                    <Table.Td>
                      <Code>{key.fingerprint}</Code>
                    </Table.Td>
                    <Table.Td>
                      <Text size="sm">{when(key.createdAt)}</Text>
                    </Table.Td>
                    <Table.Td>
                      <Group justify="flex-end">
                        <ConfirmButton
                          size="xs"
                          variant="subtle"
                          color="red"
                          label="Delete"
                          aria-label={`Delete ${key.name}`}
                          title={`Delete the SSH key "${key.name}"?`}
                          message="It no longer lets you in to your services (running ones included)."
                          confirmLabel="Delete"
                          onConfirm={() => drop(key.id, key.name)}
                        />
                      </Group>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
        <SshKeyForm
          keyLabel="Public key"
          keyDescription="ssh-ed25519, ecdsa, or RSA of 2048 bits or more: the line of ~/.ssh/id_ed25519.pub"
          nameLabel="Name"
          submitLabel="Add SSH key"
          fetching={fetching}
          add={submit}
        />
      </Stack>
    </Paper>
  );
}
