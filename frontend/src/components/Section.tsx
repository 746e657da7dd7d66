import { Card, Group, Paper, Stack, Text, Title } from "@mantine/core";
import type { ReactNode } from "react";

/** A titled part of a form or a page (with a line of description under the title, if given). */
export function Section({ title, description, children }: { title: string; description?: string; children: ReactNode }) {
  return (
    <Paper withBorder p="md" radius="md">
      <Stack gap="sm">
        {description ? (
          <Stack gap={2}>
            <Title order={4}>{title}</Title>
            <Text size="xs" c="dimmed">
              {description}
            </Text>
          </Stack>
        ) : (
          <Title order={4}>{title}</Title>
        )}
        {children}
      </Stack>
    </Paper>
  );
}

/** A titled card of a detail page, with an action (a button, a link) at the right of its title;
 * a region named by its title. */
export function Panel({ title, action, children }: { title: string; action?: ReactNode; children: ReactNode }) {
  return (
    <Card withBorder radius="md" padding="lg" component="section" aria-label={title}>
      <Group justify="space-between" mb="sm" wrap="wrap" gap="xs">
        <Title order={4}>{title}</Title>
        {action}
      </Group>
      {children}
    </Card>
  );
}
