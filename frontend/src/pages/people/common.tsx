import { ActionIcon, Alert, Button, Code, CopyButton, Group, Stack, Text } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { IconCheck, IconCopy, IconKey } from "@tabler/icons-react";
import type { ReactNode } from "react";

import { useAuth } from "../../app/auth";
import { describeError, type ServerError } from "../../components/errors";
import { ErrorState } from "../../components/states";

/** A date and time in the browser's locale, or `none` when there is none. */
export function when(value: string | null | undefined, none = "Never"): string {
  return value ? new Date(value).toLocaleString() : none;
}

/** Pages for platform admins only (Administration). */
export function PlatformAdminOnly({ children }: { children: ReactNode }) {
  const { me } = useAuth();
  if (!me?.isPlatformAdmin) return <ErrorState message="Only platform admins may open the administration pages." />;
  return <>{children}</>;
}

/** A mutation's answer: true when it did what was asked, else a red notification saying why
 * (its userErrors, or the GraphQL/network error). */
export function succeeded(
  title: string,
  payload: { userErrors: readonly ServerError[] } | null | undefined,
  error: Parameters<typeof describeError>[0],
): boolean {
  if (payload && payload.userErrors.length === 0) return true;
  const message = payload?.userErrors.map((e) => e.message).join("; ") || describeError(error) || "No answer from the server.";
  notifications.show({ color: "red", title, message });
  return false;
}

/** A secret shown the one time the API gives it (an API token), with a copy button. */
export function SecretOnce({ secret, onDone, title, children }: { secret: string; onDone: () => void; title: string; children: ReactNode }) {
  return (
    <Stack>
      <Alert color="yellow" icon={<IconKey size={18} />} title={title}>
        {children}
      </Alert>
      <Group gap="xs" wrap="nowrap">
        <Code block style={{ flex: 1, wordBreak: "break-all" }} data-testid="secret-once">
          {secret}
        </Code>
        <CopyButton value={secret}>
          {({ copied, copy }) => (
            <ActionIcon variant="light" onClick={copy} aria-label={copied ? "Copied" : "Copy to the clipboard"}>
              {copied ? <IconCheck size={16} /> : <IconCopy size={16} />}
            </ActionIcon>
          )}
        </CopyButton>
      </Group>
      <Text size="xs" c="dimmed">
        Closing this window hides it for good.
      </Text>
      <Group justify="flex-end">
        <Button onClick={onDone}>Done</Button>
      </Group>
    </Stack>
  );
}
