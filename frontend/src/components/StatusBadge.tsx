import { Badge, Loader } from "@mantine/core";

const COLORS: Record<string, string> = {
  NOT_DEPLOYED: "gray",
  WAITING: "yellow",
  IN_PROGRESS: "blue",
  SUCCESS: "green",
  FAILED: "red",
  DESTROYING: "orange",
  PENDING: "yellow",
  STARTING: "blue",
  RUNNING: "green",
  STOPPING: "orange",
  STOPPED: "gray",
  DELETING: "orange",
};
const BUSY = new Set(["WAITING", "IN_PROGRESS", "DESTROYING", "PENDING", "STARTING", "STOPPING", "DELETING"]);

/** "IN_PROGRESS" -> "In Progress", as the seeds write statuses. */
export function statusLabel(status: string): string {
  return status
    .toLowerCase()
    .split("_")
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join(" ");
}

export function StatusBadge({ status }: { status: string }) {
  return (
    <Badge
      color={COLORS[status] ?? "gray"}
      variant="light"
      leftSection={BUSY.has(status) ? <Loader size={10} color={COLORS[status]} /> : undefined}
      data-status={status}
    >
      {statusLabel(status)}
    </Badge>
  );
}
