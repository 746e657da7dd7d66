import { Badge, Loader } from "@mantine/core";

import { statusLabel } from "../../components/StatusBadge";

const COLORS: Record<string, string> = {
  QUEUED: "yellow",
  RUNNING: "blue",
  SUCCEEDED: "green",
  FAILED: "red",
  CANCELED: "gray",
};

/** The status of a deployment run (Queued, Running, Succeeded, Failed, Canceled). */
export function RunStatusBadge({ status }: { status: string }) {
  const busy = status === "QUEUED" || status === "RUNNING";
  return (
    <Badge
      color={COLORS[status] ?? "gray"}
      variant="light"
      leftSection={busy ? <Loader size={10} color={COLORS[status]} /> : undefined}
      data-status={status}
    >
      {statusLabel(status)}
    </Badge>
  );
}
