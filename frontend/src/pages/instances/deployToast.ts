/* The "Deploying" notification of a compute instance: shown until the instance reaches an outcome
 * (it does not close on a timer while the deploy is still going, nor stay once it FAILED), then
 * replaced by that outcome, whichever page sees the status change. */
import { notifications } from "@mantine/notifications";
import { useEffect } from "react";

/** The statuses a deploy ends in. */
const SETTLED = new Set(["SUCCESS", "FAILED", "NOT_DEPLOYED"]);
const open = new Set<string>();

function toastId(instanceId: string): string {
  return `deploying-${instanceId}`;
}

export function showDeploying(instanceId: string, message: string): void {
  open.add(instanceId);
  notifications.show({ id: toastId(instanceId), color: "blue", title: "Deploying", message, loading: true, autoClose: false });
}

/** Replaces the instance's "Deploying" notification (if one is shown) by the outcome. */
export function settleDeploying(instanceId: string, status: string, message: string | null, name: string): void {
  if (!open.has(instanceId) || !SETTLED.has(status)) return;
  open.delete(instanceId);
  const failed = status === "FAILED";
  notifications.update({
    id: toastId(instanceId),
    color: failed ? "red" : "green",
    title: failed ? `“${name}” failed` : status === "SUCCESS" ? `“${name}” is deployed` : `“${name}” is not deployed`,
    message: message ?? (failed ? "The deploy failed." : "The deploy is over."),
    loading: false,
    autoClose: failed ? 10_000 : 4_000,
  });
}

/** Settles the notification when a live status event says the deploy ended. */
export function useSettleDeploying(event: { id: string; status: string; message: string | null; name: string } | null): void {
  const id = event?.id;
  const status = event?.status;
  const message = event?.message ?? null;
  const name = event?.name ?? "";
  useEffect(() => {
    if (id && status) settleDeploying(id, status, message, name);
  }, [id, status, message, name]);
}
