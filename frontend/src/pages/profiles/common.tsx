import { Badge, Group, Stack, Text } from "@mantine/core";

import type { Sharing } from "../../components/SharingModal";

/** Small pieces shared by the Compute Profiles pages. */

/** The sharing of a profile: its mode, and the projects when they are selected ones. */
export function SharingSummary({ sharing }: { sharing: Sharing }) {
  if (sharing.mode === "NONE") {
    return (
      <Badge variant="light" color="gray">
        Not shared
      </Badge>
    );
  }
  if (sharing.mode === "ALL_PROJECTS") {
    return (
      <Badge variant="light" color="teal">
        All Projects
      </Badge>
    );
  }
  return (
    <Stack gap={4} align="flex-start">
      <Badge variant="light" color="blue">
        Selected Projects
      </Badge>
      <Text size="xs" c="dimmed">
        {sharing.projects.map((p) => p.displayName || p.name).join(", ") || "none visible to you"}
      </Text>
    </Stack>
  );
}

export function allocationLabel(type: string): string {
  return type === "DEDICATED" ? "Dedicated" : type === "SHARED" ? "Shared" : type;
}

export interface ResourcesValue {
  cpu: string;
  memory: string;
  storage: string;
  gpuCount: number;
  gpuVendor: string;
  gpuModel?: string | null;
}

export function gpuSummary(r: ResourcesValue): string {
  if (r.gpuCount === 0 || r.gpuVendor === "CPU") return "No GPU";
  return `${r.gpuCount} × ${r.gpuVendor}${r.gpuModel ? ` ${r.gpuModel}` : ""}`;
}

/** "2 × NVIDIA A100 · 8 CPU · 64Gi RAM · 100Gi disk" */
export function ResourcesSummary({ resources }: { resources: ResourcesValue }) {
  return (
    <Group gap={6} wrap="wrap">
      <Badge variant="outline" color={resources.gpuCount > 0 ? "grape" : "gray"} tt="none">
        {gpuSummary(resources)}
      </Badge>
      <Text size="xs" c="dimmed">
        {resources.cpu} CPU · {resources.memory} memory · {resources.storage} storage
      </Text>
    </Group>
  );
}

export const OVERRIDE_LABELS: Record<string, string> = {
  ALLOWED: "Allowed",
  NOT_ALLOWED: "Not allowed",
  RESTRICTED: "Restricted",
};

export function formatDate(value: string | null | undefined): string {
  return value ? new Date(value).toLocaleString() : "—";
}
