import {
  ActionIcon,
  Alert,
  Anchor,
  Button,
  Checkbox,
  Code,
  CopyButton,
  Group,
  Modal,
  Stack,
  Switch,
  Table,
  Text,
  TextInput,
  Title,
  Tooltip,
  VisuallyHidden,
} from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { IconCheck, IconCopy, IconKey, IconList, IconPlus, IconSend } from "@tabler/icons-react";
import { useState } from "react";
import { Link } from "react-router-dom";
import { useMutation, useQuery } from "urql";

import { useProject } from "../../app/project";
import { ConfirmButton } from "../../components/ConfirmButton";
import { FormErrors } from "../../components/FormErrors";
import { describeError, errorsByField } from "../../components/errors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import type { WebhookEvent, WebhookFieldsFragment } from "../../gql/graphql";
import { EVENTS, EventBadges } from "./common";
import { WebhookCreateDocument, WebhookDeleteDocument, WebhooksListDocument, WebhookTestDocument, WebhookUpdateDocument } from "./queries";

/** The project's webhooks (its admins'): add one (its secret shown once), switch one on or off,
 * send it a test event, open its delivery log, delete it. */
export function WebhooksPage() {
  const { project } = useProject();
  const [{ data, error }, refetch] = useQuery({ query: WebhooksListDocument, variables: { project }, requestPolicy: "cache-and-network" });
  const reload = () => refetch({ requestPolicy: "network-only" });
  const [creating, setCreating] = useState(false);
  const actions = useWebhookActions(reload);

  return (
    <Stack>
      <Group justify="space-between" align="flex-end">
        <Stack gap={2}>
          <Title order={2}>Webhooks</Title>
          <Text c="dimmed" size="sm">
            Signed HTTP POSTs to your receivers when instances succeed or fail, an auto-stop nears or a quota is reached.
          </Text>
        </Stack>
        <Button leftSection={<IconPlus size={16} />} onClick={() => setCreating(true)}>
          Add Webhook
        </Button>
      </Group>
      {error && !data ? (
        <ErrorState message={describeError(error) ?? "Could not load the webhooks."} onRetry={reload} />
      ) : !data ? (
        <Loading label="Loading webhooks" />
      ) : data.webhooks.length === 0 ? (
        <EmptyState
          title="No webhooks yet"
          action={
            <Button leftSection={<IconPlus size={16} />} onClick={() => setCreating(true)}>
              Add Webhook
            </Button>
          }
        >
          Tell a chat channel, an on-call tool or your own service when something happens in this project.
        </EmptyState>
      ) : (
        <Table.ScrollContainer minWidth={800}>
          <Table verticalSpacing="sm">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>URL</Table.Th>
                <Table.Th>Events</Table.Th>
                <Table.Th>Enabled</Table.Th>
                <Table.Th>
                  <VisuallyHidden>Actions</VisuallyHidden>
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {data.webhooks.map((hook) => (
                <Table.Tr key={hook.id} data-testid={`webhook-${hook.id}`}>
                  <Table.Td miw={240} maw={360}>
                    <Anchor component={Link} to={hook.id} ff="monospace" size="sm" style={{ wordBreak: "break-all" }}>
                      {hook.url}
                    </Anchor>
                  </Table.Td>
                  <Table.Td>
                    <EventBadges events={hook.events} />
                  </Table.Td>
                  <Table.Td>
                    <Switch
                      aria-label={`Enabled: ${hook.url}`}
                      checked={hook.enabled}
                      disabled={actions.busy === hook.id}
                      onChange={(e) => void actions.setEnabled(hook, e.currentTarget.checked)}
                    />
                  </Table.Td>
                  <Table.Td>
                    <Group gap={4} justify="flex-end" wrap="nowrap">
                      <Tooltip label="Send a test event">
                        <ActionIcon variant="subtle" aria-label={`Send a test event to ${hook.url}`} onClick={() => void actions.sendTest(hook)}>
                          <IconSend size={16} />
                        </ActionIcon>
                      </Tooltip>
                      <Tooltip label="Delivery log">
                        <ActionIcon variant="subtle" component={Link} to={hook.id} aria-label={`Delivery log of ${hook.url}`}>
                          <IconList size={16} />
                        </ActionIcon>
                      </Tooltip>
                      <ConfirmButton
                        size="xs"
                        variant="subtle"
                        color="red"
                        label="Delete"
                        title="Delete this webhook?"
                        message={`${hook.url} will get no more events; deliveries not yet sent are dropped, and its delivery log is deleted.`}
                        confirmLabel="Delete"
                        onConfirm={() => actions.remove(hook)}
                      />
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      <CreateWebhookModal project={project} opened={creating} onClose={() => setCreating(false)} onCreated={reload} />
    </Stack>
  );
}

/** The row actions, with their notifications. */
export function useWebhookActions(reload: () => void) {
  const [busy, setBusy] = useState<string | null>(null);
  const [, update] = useMutation(WebhookUpdateDocument);
  const [, test] = useMutation(WebhookTestDocument);
  const [, remove] = useMutation(WebhookDeleteDocument);
  const failed = (title: string, message: string) => notifications.show({ color: "red", title, message });

  return {
    busy,
    async setEnabled(hook: WebhookFieldsFragment, enabled: boolean) {
      setBusy(hook.id);
      const result = await update({ input: { id: hook.id, enabled } });
      setBusy(null);
      const payload = result.data?.updateWebhook;
      if (!payload || payload.userErrors.length) {
        failed("Could not change the webhook", payload?.userErrors.map((e) => e.message).join("; ") ?? describeError(result.error) ?? "No answer");
        return;
      }
      reload();
    },
    async sendTest(hook: WebhookFieldsFragment) {
      const result = await test({ id: hook.id });
      const payload = result.data?.sendWebhookTestEvent;
      if (!payload || payload.userErrors.length) {
        failed("Could not send a test event", payload?.userErrors.map((e) => e.message).join("; ") ?? describeError(result.error) ?? "No answer");
        return;
      }
      notifications.show({ color: "green", title: "Test event queued", message: `Its delivery log shows how ${hook.url} answers.` });
      reload();
    },
    async remove(hook: WebhookFieldsFragment) {
      const result = await remove({ id: hook.id });
      const payload = result.data?.deleteWebhook;
      if (!payload || payload.userErrors.length) {
        failed("Could not delete the webhook", payload?.userErrors.map((e) => e.message).join("; ") ?? describeError(result.error) ?? "No answer");
        return false;
      }
      notifications.show({ color: "green", title: "Webhook deleted", message: hook.url });
      reload();
      return true;
    },
  };
}

function CreateWebhookModal({ project, opened, onClose, onCreated }: { project: string; opened: boolean; onClose: () => void; onCreated: () => void }) {
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<WebhookEvent[]>(["COMPUTE_INSTANCE_FAILED", "SERVICE_INSTANCE_FAILED"]);
  const [enabled, setEnabled] = useState(true);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [secret, setSecret] = useState<string | null>(null);
  const [{ fetching }, create] = useMutation(WebhookCreateDocument);

  const close = () => {
    setUrl("");
    setEvents(["COMPUTE_INSTANCE_FAILED", "SERVICE_INSTANCE_FAILED"]);
    setEnabled(true);
    setErrors({});
    setSecret(null);
    onClose();
  };

  const submit = async () => {
    const result = await create({ input: { project, url: url.trim(), events, enabled } });
    const payload = result.data?.createWebhook;
    if (!payload) {
      setErrors({ "": describeError(result.error) ?? "No answer from the server." });
      return;
    }
    if (payload.userErrors.length || !payload.secret) {
      setErrors(errorsByField(payload.userErrors));
      return;
    }
    setErrors({});
    setSecret(payload.secret);
    onCreated();
  };

  return (
    <Modal opened={opened} onClose={close} title={secret ? "Webhook added" : "Add a webhook"} size="lg" centered>
      {secret ? (
        <SecretOnce secret={secret} onDone={close} />
      ) : (
        <Stack>
          <TextInput
            label="URL"
            description="https:// (or http://) of your receiver. Private and loopback addresses are refused unless the platform allows them."
            placeholder="https://hooks.example.com/gpupaas"
            required
            value={url}
            onChange={(e) => setUrl(e.currentTarget.value)}
            error={errors.url}
          />
          <Checkbox.Group label="Events" description="What this webhook is told about." value={events} onChange={(v) => setEvents(v as WebhookEvent[])} error={errors.events} required>
            <Stack gap={6} mt="xs">
              {EVENTS.map((event) => (
                <Checkbox key={event.value} value={event.value} label={event.label} description={event.description} />
              ))}
            </Stack>
          </Checkbox.Group>
          <Switch label="Enabled" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />
          <FormErrors title="The webhook was not added" errors={errors} placed={["url", "events"]} />
          <Group justify="flex-end">
            <Button variant="default" onClick={close}>
              Cancel
            </Button>
            <Button loading={fetching} onClick={() => void submit()}>
              Add Webhook
            </Button>
          </Group>
        </Stack>
      )}
    </Modal>
  );
}

/** A signing secret, shown the one time the API gives it, with a copy button. */
export function SecretOnce({ secret, onDone }: { secret: string; onDone: () => void }) {
  return (
    <Stack>
      <Alert color="yellow" icon={<IconKey size={18} />} title="Copy the signing secret now">
        It is shown this once. Your receiver checks each request's X-Gpupaas-Signature header with it (see the README, "Webhooks").
      </Alert>
      <Group gap="xs" wrap="nowrap">
        <Code block style={{ flex: 1, wordBreak: "break-all" }} data-testid="webhook-secret">
          {secret}
        </Code>
        <CopyButton value={secret}>
          {({ copied, copy }) => (
            <ActionIcon variant="light" onClick={copy} aria-label="Copy the secret">
              {copied ? <IconCheck size={16} /> : <IconCopy size={16} />}
            </ActionIcon>
          )}
        </CopyButton>
      </Group>
      <Group justify="flex-end">
        <Button onClick={onDone}>Done</Button>
      </Group>
    </Stack>
  );
}
