import { Badge, Button, Group, Modal, Text } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { useState, type ReactNode } from "react";
import { useMutation } from "urql";

import { useAuth } from "../../app/auth";
import { describeError } from "../../components/errors";
import { ErrorState } from "../../components/states";
import type { ClusterFieldsFragment, ClusterStatus } from "../../gql/graphql";
import { ClusterCheckDocument, ClusterDeleteDocument } from "./queries";

/** Clusters are the platform admins' (the API refuses everyone else). */
export function PlatformAdminOnly({ children }: { children: ReactNode }) {
  const { me } = useAuth();
  if (!me?.isPlatformAdmin) {
    return (
      <ErrorState message="Only platform admins manage clusters. Ask a platform admin to register a cluster or to change one." />
    );
  }
  return <>{children}</>;
}

const STATUS_COLORS: Record<ClusterStatus, string> = { READY: "green", UNREACHABLE: "red", UNKNOWN: "gray" };
const STATUS_LABELS: Record<ClusterStatus, string> = { READY: "Ready", UNREACHABLE: "Unreachable", UNKNOWN: "Unknown" };

export function ClusterStatusBadge({ status }: { status: ClusterStatus }) {
  return (
    <Badge color={STATUS_COLORS[status]} variant="light" data-status={status}>
      {STATUS_LABELS[status]}
    </Badge>
  );
}

export function DriverBadge({ driver }: { driver: ClusterFieldsFragment["driver"] }) {
  return (
    <Badge color={driver === "KUBERNETES" ? "blue" : "grape"} variant="outline">
      {driver === "KUBERNETES" ? "Kubernetes" : "Simulated"}
    </Badge>
  );
}

/** "8 GPUs (nvidia.com/gpu: 8)" from the nodes of the last check. */
export function gpuSummary(cluster: Pick<ClusterFieldsFragment, "nodes">): string {
  const total = cluster.nodes.reduce((sum, node) => sum + node.gpuCount, 0);
  if (total === 0) return "No GPUs";
  const byKind = new Map<string, number>();
  for (const node of cluster.nodes) {
    if (!node.gpuCount) continue;
    const kind = node.gpuModel ?? node.gpuResource ?? "GPU";
    byKind.set(kind, (byKind.get(kind) ?? 0) + node.gpuCount);
  }
  const kinds = [...byKind.entries()].map(([kind, count]) => `${count} × ${kind}`).join(", ");
  return `${total} GPU${total === 1 ? "" : "s"} (${kinds})`;
}

export function checkSummary(cluster: ClusterFieldsFragment): string {
  if (cluster.status !== "READY") return cluster.statusMessage || "The cluster could not be reached.";
  const nodes = `${cluster.nodes.length} node${cluster.nodes.length === 1 ? "" : "s"}`;
  return [cluster.serverVersion ? `Version ${cluster.serverVersion}` : null, nodes, gpuSummary(cluster)]
    .filter(Boolean)
    .join(" · ");
}

export const DEFAULT_DELETE_REASON = "This is the default cluster: make another cluster the default first.";

/** Check and Delete (asks first), with their outcome as notifications. */
export function useClusterActions(onChanged: () => void, onDeleted: () => void) {
  const [, check] = useMutation(ClusterCheckDocument);
  const [checking, setChecking] = useState<string | null>(null);
  const [{ fetching: deleting }, remove] = useMutation(ClusterDeleteDocument);
  const [toDelete, setToDelete] = useState<ClusterFieldsFragment | null>(null);

  async function runCheck(cluster: ClusterFieldsFragment) {
    setChecking(cluster.id);
    const result = await check({ id: cluster.id });
    setChecking(null);
    const payload = result.data?.checkCluster;
    if (result.error || !payload) {
      notifications.show({ color: "red", title: "Could not check the cluster", message: describeError(result.error) ?? "No answer" });
      return;
    }
    if (payload.userErrors.length || !payload.cluster) {
      notifications.show({
        color: "red",
        title: "Could not check the cluster",
        message: payload.userErrors.map((e) => e.message).join("; "),
      });
      return;
    }
    const checked = payload.cluster;
    notifications.show({
      color: checked.status === "READY" ? "green" : "red",
      title: `${checked.displayName}: ${checked.status === "READY" ? "reachable" : "unreachable"}`,
      message: checkSummary(checked),
    });
    onChanged();
  }

  async function confirmDelete() {
    if (!toDelete) return;
    const cluster = toDelete;
    const result = await remove({ id: cluster.id });
    setToDelete(null);
    const payload = result.data?.deleteCluster;
    if (result.error || !payload) {
      notifications.show({ color: "red", title: "Could not delete the cluster", message: describeError(result.error) ?? "No answer" });
      return;
    }
    if (payload.userErrors.length) {
      notifications.show({
        color: "red",
        title: `Could not delete "${cluster.displayName}"`,
        message: payload.userErrors.map((e) => e.message).join("; "),
      });
      return;
    }
    notifications.show({ color: "green", message: `Cluster "${cluster.displayName}" deleted.` });
    onDeleted();
  }

  const modal = (
    <Modal opened={toDelete !== null} onClose={() => setToDelete(null)} title="Delete cluster" centered>
      <Text size="sm" mb="lg">
        Delete the cluster &quot;{toDelete?.displayName}&quot; ({toDelete?.name})? Its stored kubeconfig is deleted
        with it. Profiles that deploy to it, or instances deployed on it, prevent this. This cannot be undone.
      </Text>
      <Group justify="flex-end">
        <Button variant="default" onClick={() => setToDelete(null)}>
          Cancel
        </Button>
        <Button color="red" loading={deleting} onClick={() => void confirmDelete()}>
          Delete
        </Button>
      </Group>
    </Modal>
  );

  /** `checking`: the id of the cluster being checked. */
  return { runCheck, checking, askDelete: setToDelete, modal };
}
