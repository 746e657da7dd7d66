import { Button, Group, Modal, PasswordInput, Stack, Table, Text, TextInput, Title, VisuallyHidden } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { IconPencil, IconPlus } from "@tabler/icons-react";
import { useState } from "react";
import { useMutation, useQuery } from "urql";

import { useProject } from "../../app/project";
import { ConfirmButton } from "../../components/ConfirmButton";
import { FormErrors } from "../../components/FormErrors";
import { describeError, errorsByField } from "../../components/errors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import type { PullSecretFieldsFragment } from "../../gql/graphql";
import { PullSecretCreateDocument, PullSecretDeleteDocument, PullSecretsListDocument, PullSecretUpdateDocument } from "./queries";

/** The project's image pull secrets (its admins'): add one, change its registry, user or password
 * (the password is write-only: the API never returns it), delete one no template or service names. */
export function PullSecretsPage() {
  const { project } = useProject();
  const [{ data, error }, refetch] = useQuery({ query: PullSecretsListDocument, variables: { project }, requestPolicy: "cache-and-network" });
  const reload = () => refetch({ requestPolicy: "network-only" });
  const [editing, setEditing] = useState<PullSecretFieldsFragment | "new" | null>(null);
  const [, remove] = useMutation(PullSecretDeleteDocument);

  const deleteSecret = async (secret: PullSecretFieldsFragment) => {
    const result = await remove({ id: secret.id });
    const payload = result.data?.deleteImagePullSecret;
    if (!payload || payload.userErrors.length) {
      notifications.show({
        color: "red",
        title: "Could not delete the pull secret",
        message: payload?.userErrors.map((e) => e.message).join("; ") ?? describeError(result.error) ?? "No answer",
      });
      return false;
    }
    notifications.show({ color: "green", title: "Pull secret deleted", message: secret.name });
    reload();
    return true;
  };

  const add = (
    <Button leftSection={<IconPlus size={16} />} onClick={() => setEditing("new")}>
      Add Pull Secret
    </Button>
  );
  return (
    <Stack>
      <Group justify="space-between" align="flex-end">
        <Stack gap={2}>
          <Title order={2}>Image Pull Secrets</Title>
          <Text c="dimmed" size="sm">
            Credentials of the private registries your images come from. Templates and service instances choose one by name; passwords are kept encrypted and never shown again.
          </Text>
        </Stack>
        {add}
      </Group>
      {error && !data ? (
        <ErrorState message={describeError(error) ?? "Could not load the pull secrets."} onRetry={reload} />
      ) : !data ? (
        <Loading label="Loading pull secrets" />
      ) : data.imagePullSecrets.length === 0 ? (
        <EmptyState title="No pull secrets yet" action={add}>
          Add one to run images from a private registry such as nvcr.io or ghcr.io.
        </EmptyState>
      ) : (
        <Table verticalSpacing="sm">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Registry</Table.Th>
              <Table.Th>User</Table.Th>
              <Table.Th>
                <VisuallyHidden>Actions</VisuallyHidden>
              </Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {data.imagePullSecrets.map((secret) => (
              <Table.Tr key={secret.id} data-testid={`pull-secret-${secret.name}`}>
                <Table.Td ff="monospace">{secret.name}</Table.Td>
                <Table.Td ff="monospace">{secret.registry}</Table.Td>
                <Table.Td>{secret.username}</Table.Td>
                <Table.Td>
                  <Group gap={4} justify="flex-end" wrap="nowrap">
                    <Button size="xs" variant="subtle" leftSection={<IconPencil size={14} />} aria-label={`Change ${secret.name}`} onClick={() => setEditing(secret)}>
                      Change
                    </Button>
                    <ConfirmButton
                      size="xs"
                      variant="subtle"
                      color="red"
                      label="Delete"
                      title={`Delete pull secret ${secret.name}?`}
                      message="Refused while a template or a service instance names it."
                      confirmLabel="Delete"
                      onConfirm={() => deleteSecret(secret)}
                    />
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      {editing && <PullSecretModal project={project} secret={editing === "new" ? null : editing} onClose={() => setEditing(null)} onSaved={reload} />}
    </Stack>
  );
}

/** Add a secret (`secret` null) or change one: a password left empty keeps the old one. */
function PullSecretModal({ project, secret, onClose, onSaved }: { project: string; secret: PullSecretFieldsFragment | null; onClose: () => void; onSaved: () => void }) {
  const [name, setName] = useState(secret?.name ?? "");
  const [registry, setRegistry] = useState(secret?.registry ?? "");
  const [username, setUsername] = useState(secret?.username ?? "");
  const [password, setPassword] = useState("");
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [{ fetching: creating }, create] = useMutation(PullSecretCreateDocument);
  const [{ fetching: updating }, update] = useMutation(PullSecretUpdateDocument);

  const submit = async () => {
    const result = secret
      ? await update({ input: { id: secret.id, registry: registry.trim(), username, ...(password ? { password } : {}) } })
      : await create({ input: { project, name: name.trim(), registry: registry.trim(), username, password } });
    const payload = result.data && ("createImagePullSecret" in result.data ? result.data.createImagePullSecret : result.data.updateImagePullSecret);
    if (!payload) {
      setErrors({ "": describeError(result.error) ?? "No answer from the server." });
      return;
    }
    if (payload.userErrors.length) {
      setErrors(errorsByField(payload.userErrors));
      return;
    }
    setPassword("");
    notifications.show({ color: "green", title: secret ? "Pull secret changed" : "Pull secret added", message: payload.imagePullSecret?.name ?? name });
    onSaved();
    onClose();
  };

  return (
    <Modal opened onClose={onClose} title={secret ? `Change pull secret ${secret.name}` : "Add a pull secret"} size="lg" centered>
      <Stack>
        <TextInput
          label="Name"
          description="What templates and services choose it by, like ngc or ghcr (lowercase letters, digits and -). It cannot change later."
          required
          disabled={secret !== null}
          value={name}
          onChange={(e) => setName(e.currentTarget.value)}
          error={errors.name}
        />
        <TextInput label="Registry" description="The registry's host, with its port if it has one." placeholder="nvcr.io" required value={registry} onChange={(e) => setRegistry(e.currentTarget.value)} error={errors.registry} />
        <TextInput label="User" required value={username} onChange={(e) => setUsername(e.currentTarget.value)} error={errors.username} autoComplete="off" />
        <PasswordInput
          label="Password"
          description={secret ? "Leave empty to keep the current one: it is never shown." : "Or an access token. Kept encrypted; never shown again."}
          required={secret === null}
          value={password}
          onChange={(e) => setPassword(e.currentTarget.value)}
          error={errors.password}
          autoComplete="new-password"
        />
        <FormErrors title={secret ? "The pull secret was not changed" : "The pull secret was not added"} errors={errors} placed={["name", "registry", "username", "password"]} />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button loading={creating || updating} onClick={() => void submit()}>
            {secret ? "Save" : "Add Pull Secret"}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
