import { Badge, Group } from "@mantine/core";

import type { WebhookDeliveryStatus, WebhookEvent } from "../../gql/graphql";

/** The events a webhook may want, in the order the form lists them, with what each means. */
export const EVENTS: { value: WebhookEvent; label: string; description: string }[] = [
  { value: "COMPUTE_INSTANCE_SUCCESS", label: "Compute instance succeeded", description: "a compute instance reaches SUCCESS" },
  { value: "COMPUTE_INSTANCE_FAILED", label: "Compute instance failed", description: "a deploy fails, or a deployed instance drifts to FAILED" },
  { value: "SERVICE_INSTANCE_SUCCESS", label: "Service instance running", description: "a service instance reaches RUNNING" },
  { value: "SERVICE_INSTANCE_FAILED", label: "Service instance failed", description: "a service instance turns FAILED" },
  { value: "AUTO_STOP_WARNING", label: "Auto-stop warning", description: "an instance is about to be stopped" },
  { value: "QUOTA_REACHED", label: "Quota reached", description: "a quota refused a deploy or a start" },
];

export function eventLabel(event: WebhookEvent): string {
  if (event === "TEST") return "Test event";
  return EVENTS.find((e) => e.value === event)?.label ?? event;
}

export function EventBadges({ events }: { events: readonly WebhookEvent[] }) {
  return (
    <Group gap={4}>
      {events.map((event) => (
        <Badge key={event} size="sm" variant="light" color={event.endsWith("FAILED") ? "red" : event.endsWith("SUCCESS") ? "green" : "orange"}>
          {eventLabel(event)}
        </Badge>
      ))}
    </Group>
  );
}

const STATUS_COLORS: Record<WebhookDeliveryStatus, string> = { PENDING: "blue", DELIVERED: "green", FAILED: "red" };
const STATUS_LABELS: Record<WebhookDeliveryStatus, string> = { PENDING: "Pending", DELIVERED: "Delivered", FAILED: "Failed" };

export function DeliveryStatusBadge({ status }: { status: WebhookDeliveryStatus }) {
  return (
    <Badge color={STATUS_COLORS[status]} variant="light">
      {STATUS_LABELS[status]}
    </Badge>
  );
}
