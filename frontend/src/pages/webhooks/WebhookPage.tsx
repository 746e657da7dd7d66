import { Accordion, Anchor, Badge, Button, Code, Group, Modal, Stack, Switch, Table, Text, Title } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { IconArrowLeft, IconRefresh, IconSend } from "@tabler/icons-react";
import { useEffect, useState } from "react";
import { Link, useNavigate, useParams } from "react-router-dom";
import { useMutation, useQuery } from "urql";

import { useProject } from "../../app/project";
import { ConfirmButton } from "../../components/ConfirmButton";
import { Panel } from "../../components/Section";
import { describeError } from "../../components/errors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import type { WebhookLogQuery } from "../../gql/graphql";
import { DeliveryStatusBadge, EventBadges, eventLabel } from "./common";
import { WebhookLogDocument, WebhookRotateDocument } from "./queries";
import { SecretOnce, useWebhookActions } from "./WebhooksPage";

type Delivery = NonNullable<WebhookLogQuery["webhook"]>["deliveries"]["edges"][number]["node"];

const PAGE = 20;
// While a delivery is pending, the log is read again this often.
const POLL_MS = 2000;

/** One webhook: its settings, a test event, and its delivery log (newest first, each delivery's
 * attempts: when, the answer or the error, how long it took). */
export function WebhookPage() {
  const { project } = useProject();
  const { id = "" } = useParams();
  const navigate = useNavigate();
  const [first, setFirst] = useState(PAGE);
  const [{ data, error, fetching }, refetch] = useQuery({ query: WebhookLogDocument, variables: { id, first }, requestPolicy: "cache-and-network" });
  const reload = () => refetch({ requestPolicy: "network-only" });
  const actions = useWebhookActions(reload);
  const [, rotate] = useMutation(WebhookRotateDocument);
  const [secret, setSecret] = useState<string | null>(null);
  const hook = data?.webhook;
  const newSecret = async () => {
    const result = await rotate({ id });
    const payload = result.data?.rotateWebhookSecret;
    if (!payload?.secret) {
      notifications.show({
        color: "red",
        title: "Could not make a new secret",
        message: payload?.userErrors.map((e) => e.message).join("; ") ?? describeError(result.error) ?? "No answer",
      });
      return;
    }
    setSecret(payload.secret);
  };
  const pending = hook?.deliveries.edges.some((e) => e.node.status === "PENDING") ?? false;
  useEffect(() => {
    if (!pending) return;
    const timer = window.setTimeout(() => refetch({ requestPolicy: "network-only" }), POLL_MS);
    return () => window.clearTimeout(timer);
  }, [pending, data, refetch]);
  const back = `/p/${project}/studio/webhooks`;

  if (error && !data) return <ErrorState message={describeError(error) ?? "Could not load the webhook."} onRetry={reload} />;
  if (!data) return <Loading label="Loading the webhook" />;
  if (!hook) return <ErrorState message="This webhook does not exist (any more)." />;

  return (
    <Stack>
      <Anchor component={Link} to={back} size="sm">
        <Group gap={4}>
          <IconArrowLeft size={14} /> Webhooks
        </Group>
      </Anchor>
      <Group justify="space-between" align="flex-end">
        <Stack gap={4}>
          <Title order={2} style={{ wordBreak: "break-all" }}>
            {hook.url}
          </Title>
          <EventBadges events={hook.events} />
        </Stack>
        <Group>
          <Switch label="Enabled" checked={hook.enabled} disabled={actions.busy === hook.id} onChange={(e) => void actions.setEnabled(hook, e.currentTarget.checked)} />
          <Button leftSection={<IconSend size={16} />} onClick={() => void actions.sendTest(hook)}>
            Send test event
          </Button>
          <ConfirmButton
            color="orange"
            variant="light"
            label="New secret"
            title="Make a new signing secret?"
            message="The current secret stops signing at once: update your receiver with the new one, which is shown once."
            confirmLabel="Make a new secret"
            onConfirm={newSecret}
          />
          <ConfirmButton
            color="red"
            variant="light"
            label="Delete"
            title="Delete this webhook?"
            message={`${hook.url} will get no more events; deliveries not yet sent are dropped, and its delivery log is deleted.`}
            confirmLabel="Delete"
            onConfirm={async () => {
              if (await actions.remove(hook)) navigate(back);
            }}
          />
        </Group>
      </Group>
      <Panel
        title={`Delivery log (${hook.deliveries.totalCount})`}
        action={
          <Button size="xs" variant="default" leftSection={<IconRefresh size={14} />} loading={fetching} onClick={reload}>
            Refresh
          </Button>
        }
      >
        {hook.deliveries.edges.length === 0 ? (
          <EmptyState title="Nothing sent yet">Send a test event to see how the receiver answers.</EmptyState>
        ) : (
          <Stack>
            <Accordion variant="separated" multiple transitionDuration={0}>
              {hook.deliveries.edges.map(({ node }) => (
                <DeliveryItem key={node.id} delivery={node} />
              ))}
            </Accordion>
            {hook.deliveries.pageInfo.hasNextPage && (
              <Group justify="center">
                <Button variant="default" onClick={() => setFirst(first + PAGE)}>
                  Show older deliveries
                </Button>
              </Group>
            )}
          </Stack>
        )}
      </Panel>
      <Modal opened={secret !== null} onClose={() => setSecret(null)} title="New signing secret" size="lg" centered>
        {secret && <SecretOnce secret={secret} onDone={() => setSecret(null)} />}
      </Modal>
    </Stack>
  );
}

function when(iso: string): string {
  return new Date(iso).toLocaleString();
}

function DeliveryItem({ delivery }: { delivery: Delivery }) {
  return (
    <Accordion.Item value={delivery.id} data-testid={`delivery-${delivery.id}`}>
      <Accordion.Control>
        <Group justify="space-between" wrap="nowrap" pr="sm">
          <Group gap="sm" wrap="nowrap">
            <DeliveryStatusBadge status={delivery.status} />
            <Text size="sm" fw={500}>
              {eventLabel(delivery.event)}
            </Text>
            <Text size="xs" c="dimmed">
              {when(delivery.createdAt)}
            </Text>
          </Group>
          <Text size="xs" c="dimmed" ta="right">
            {delivery.attemptCount === 1 ? "1 attempt" : `${delivery.attemptCount} attempts`}
            {delivery.status === "PENDING" && delivery.nextAttemptAt ? ` · next ${when(delivery.nextAttemptAt)}` : ""}
            {delivery.lastError ? ` · ${delivery.lastError}` : ""}
          </Text>
        </Group>
      </Accordion.Control>
      <Accordion.Panel>
        <Text size="xs" c="dimmed" mb="xs">
          Event id <Code>{delivery.eventId}</Code>
        </Text>
        {delivery.attempts.length === 0 ? (
          <Text size="sm" c="dimmed">
            Not tried yet.
          </Text>
        ) : (
          <Table.ScrollContainer minWidth={600}>
            <Table verticalSpacing={4} fz="sm">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>#</Table.Th>
                  <Table.Th>When</Table.Th>
                  <Table.Th>Answer</Table.Th>
                  <Table.Th>Took</Table.Th>
                  <Table.Th>Response</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {delivery.attempts.map((attempt) => (
                  <Table.Tr key={attempt.number}>
                    <Table.Td>{attempt.number}</Table.Td>
                    <Table.Td>{when(attempt.startedAt)}</Table.Td>
                    <Table.Td>
                      {attempt.statusCode !== null && attempt.statusCode !== undefined && (
                        <Badge variant="light" color={attempt.statusCode >= 200 && attempt.statusCode < 300 ? "green" : "red"} mr={4}>
                          HTTP {attempt.statusCode}
                        </Badge>
                      )}
                      {attempt.error && (attempt.statusCode === null || attempt.statusCode === undefined || !attempt.error.startsWith("HTTP")) && (
                        <Text span size="sm" c="red">
                          {attempt.error}
                        </Text>
                      )}
                    </Table.Td>
                    <Table.Td>{attempt.durationMs} ms</Table.Td>
                    <Table.Td maw={320}>
                      {attempt.responseExcerpt ? (
                        <Code style={{ whiteSpace: "pre-wrap", wordBreak: "break-all" }}>{attempt.responseExcerpt}</Code>
                      ) : (
                        <Text size="xs" c="dimmed">
                          none
                        </Text>
                      )}
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </Accordion.Panel>
    </Accordion.Item>
  );
}
