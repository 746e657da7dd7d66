import { Alert, Button, Group, List, Modal, Text } from "@mantine/core";
import { IconAlertTriangle } from "@tabler/icons-react";
import { useState, type ReactNode } from "react";

/** Asks before a destructive action ("This cannot be undone.") and keeps the dialog open with the
 * server's errors when it refuses. `onConfirm` resolves to the messages to show (empty: done). */
export function ConfirmDeleteModal({
  opened,
  title,
  message,
  confirmLabel = "Delete",
  onConfirm,
  onClose,
}: {
  opened: boolean;
  title: string;
  message: ReactNode;
  confirmLabel?: string;
  onConfirm: () => Promise<string[]>;
  onClose: () => void;
}) {
  return (
    <Modal opened={opened} onClose={onClose} title={title} centered>
      {/* Inside the modal: it starts afresh (no errors of an earlier try) each time it opens. */}
      <ConfirmDelete message={message} confirmLabel={confirmLabel} onConfirm={onConfirm} onClose={onClose} />
    </Modal>
  );
}

function ConfirmDelete({
  message,
  confirmLabel,
  onConfirm,
  onClose,
}: {
  message: ReactNode;
  confirmLabel: string;
  onConfirm: () => Promise<string[]>;
  onClose: () => void;
}) {
  const [busy, setBusy] = useState(false);
  const [errors, setErrors] = useState<string[]>([]);

  async function confirm() {
    setBusy(true);
    try {
      const problems = await onConfirm();
      setErrors(problems);
      if (problems.length === 0) onClose();
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <Text size="sm" mb="xs">
        {message}
      </Text>
      <Text size="sm" fw={500} c="red" mb="lg">
        This cannot be undone.
      </Text>
      {errors.length > 0 && (
        <Alert color="red" icon={<IconAlertTriangle size={18} />} mb="md" title="Not deleted">
          <List size="sm">
            {errors.map((error) => (
              <List.Item key={error}>{error}</List.Item>
            ))}
          </List>
        </Alert>
      )}
      <Group justify="flex-end">
        <Button variant="default" onClick={onClose}>
          Cancel
        </Button>
        <Button color="red" loading={busy} onClick={() => void confirm()}>
          {confirmLabel}
        </Button>
      </Group>
    </>
  );
}
