import { Alert, Button, Center, Group, Loader, Stack, Text, Title } from "@mantine/core";
import { IconAlertTriangle, IconInbox } from "@tabler/icons-react";
import type { ReactNode } from "react";

export function Loading({ label = "Loading" }: { label?: string }) {
  return (
    <Center py="xl" aria-busy="true">
      <Group gap="sm">
        <Loader size="sm" aria-label={label} />
        <Text c="dimmed">{label}…</Text>
      </Group>
    </Center>
  );
}

export function ErrorState({ message, onRetry }: { message: string; onRetry?: () => void }) {
  return (
    <Alert color="red" icon={<IconAlertTriangle size={18} />} title="Something went wrong" role="alert">
      <Stack gap="xs">
        <Text size="sm">{message}</Text>
        {onRetry && (
          <Group>
            <Button size="xs" variant="light" color="red" onClick={onRetry}>
              Try again
            </Button>
          </Group>
        )}
      </Stack>
    </Alert>
  );
}

export function EmptyState({ title, children, action }: { title: string; children?: ReactNode; action?: ReactNode }) {
  return (
    <Center py={48}>
      <Stack align="center" gap="xs" maw={420} ta="center">
        <IconInbox size={40} stroke={1.3} color="var(--mantine-color-dimmed)" aria-hidden />
        <Title order={4}>{title}</Title>
        {children && (
          <Text c="dimmed" size="sm">
            {children}
          </Text>
        )}
        {action}
      </Stack>
    </Center>
  );
}
