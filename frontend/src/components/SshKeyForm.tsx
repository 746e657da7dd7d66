/* Adding an SSH public key: to one's profile (the account page) or to a service (its Connect
 * panel). One pasted .pub line and an optional name; the server's messages go under their fields. */
import { Button, Group, Stack, TextInput, Textarea } from "@mantine/core";
import { IconPlus } from "@tabler/icons-react";
import { useState } from "react";

import { FormErrors } from "./FormErrors";
import { describeError, errorsByField, type ServerError } from "./errors";

/** What the mutation answered: its payload (null: no answer) and the GraphQL error, if any. */
export interface SshKeyAdded {
  payload: { userErrors: readonly ServerError[]; added: boolean } | null | undefined;
  error: Parameters<typeof describeError>[0];
}

export function SshKeyForm({
  keyLabel,
  keyDescription,
  nameLabel,
  submitLabel,
  size = "sm",
  fetching,
  add,
}: {
  keyLabel: string;
  keyDescription: string;
  nameLabel: string;
  submitLabel: string;
  size?: "xs" | "sm";
  fetching: boolean;
  /** The trimmed key line and name (null: the key's comment). True once added. */
  add: (publicKey: string, name: string | null) => Promise<SshKeyAdded>;
}) {
  const [name, setName] = useState("");
  const [publicKey, setPublicKey] = useState("");
  const [errors, setErrors] = useState<Record<string, string>>({});

  const submit = async () => {
    const { payload, error } = await add(publicKey.trim(), name.trim() || null);
    if (!payload) {
      setErrors({ "": describeError(error) ?? "No answer from the server." });
      return;
    }
    if (payload.userErrors.length || !payload.added) {
      setErrors(errorsByField(payload.userErrors));
      return;
    }
    setErrors({});
    setName("");
    setPublicKey("");
  };

  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      <Stack gap={size} maw={640}>
        <Textarea
          label={keyLabel}
          description={keyDescription}
          required
          autosize={false}
          rows={size === "sm" ? 3 : 2}
          value={publicKey}
          onChange={(e) => setPublicKey(e.currentTarget.value)}
          error={errors.publicKey}
          aria-invalid={Boolean(errors.publicKey) || undefined}
        />
        <TextInput label={nameLabel} description="Optional: the key's comment when empty." value={name} onChange={(e) => setName(e.currentTarget.value)} error={errors.name} aria-invalid={Boolean(errors.name) || undefined} />
        <FormErrors title="The key was not added" errors={errors} placed={["publicKey", "name"]} />
        <Group>
          <Button type="submit" size={size} leftSection={<IconPlus size={size === "sm" ? 16 : 14} />} loading={fetching}>
            {submitLabel}
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
