import { Alert, Stack, Text } from "@mantine/core";
import { IconAlertTriangle } from "@tabler/icons-react";

import { unplacedErrors } from "./errors";

/** Why a form was not saved, as far as no field of it shows: errors keyed by field (see
 * errorsByField; "" holds a network failure or an error without a field) less those under the
 * fields in `placed`, listed under `title` above the form's buttons. Nothing when there are none. */
export function FormErrors({ title, errors, placed = [] }: { title: string; errors: Record<string, string>; placed?: readonly string[] }) {
  const messages = unplacedErrors(errors, placed);
  if (messages.length === 0) return null;
  return (
    <Alert color="red" icon={<IconAlertTriangle size={18} />} title={title} role="alert">
      <Stack gap={2}>
        {messages.map((message) => (
          <Text key={message} size="sm">
            {message}
          </Text>
        ))}
      </Stack>
    </Alert>
  );
}
