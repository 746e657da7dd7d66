import { Badge, Group, SimpleGrid, Stack, Text, ThemeIcon } from "@mantine/core";
import { IconCpu, IconDatabase, IconDeviceDesktopAnalytics, IconServer2, IconStack2 } from "@tabler/icons-react";
import { useState, type ReactNode } from "react";

/** The resources of a SKU (a compute profile) or of an instance's snapshot of it. */
export interface Resources {
  cpu: string;
  memory: string;
  storage: string;
  gpuCount: number;
  gpuVendor: string;
  gpuModel?: string | null;
}

const VENDORS: Record<string, string> = { NVIDIA: "NVIDIA", AMD: "AMD", INTEL: "Intel", ASCEND: "Ascend", CPU: "CPU" };

export function vendorLabel(vendor: string): string {
  return VENDORS[vendor] ?? vendor;
}

/** "2 × NVIDIA A100", or "No GPU" for CPU-only SKUs. */
export function gpuLabel(resources: Resources): string {
  if (resources.gpuCount <= 0 || resources.gpuVendor === "CPU") return "No GPU";
  const model = [vendorLabel(resources.gpuVendor), resources.gpuModel].filter(Boolean).join(" ");
  return `${resources.gpuCount} × ${model}`;
}

export function allocationLabel(allocation: string): string {
  return allocation === "DEDICATED" ? "Dedicated" : allocation === "SHARED" ? "Shared" : allocation;
}

function Item({ icon, label, value }: { icon: ReactNode; label: string; value: string }) {
  return (
    <Group gap={8} wrap="nowrap" align="flex-start">
      <ThemeIcon variant="light" size="md" color="gray" aria-hidden>
        {icon}
      </ThemeIcon>
      <Stack gap={0}>
        <Text size="xs" c="dimmed">
          {label}
        </Text>
        <Text size="sm" fw={500}>
          {value}
        </Text>
      </Stack>
    </Group>
  );
}

/** GPUs, CPU, memory and storage, as a small grid of labelled values. */
export function ResourceGrid({ resources, cols = { base: 2, sm: 4 } }: { resources: Resources; cols?: { base: number; sm?: number; lg?: number } }) {
  return (
    <SimpleGrid cols={cols} spacing="sm" verticalSpacing="sm">
      <Item icon={<IconDeviceDesktopAnalytics size={16} />} label="GPUs" value={gpuLabel(resources)} />
      <Item icon={<IconCpu size={16} />} label="CPU" value={resources.cpu} />
      <Item icon={<IconStack2 size={16} />} label="Memory" value={resources.memory} />
      <Item icon={<IconDatabase size={16} />} label="Storage" value={resources.storage} />
    </SimpleGrid>
  );
}

/** A one-line summary, for lists: "2 × NVIDIA A100 · 8 CPU · 64Gi memory · 100Gi storage". */
export function resourceSummary(resources: Resources): string {
  return [gpuLabel(resources), `${resources.cpu} CPU`, `${resources.memory} memory`, `${resources.storage} storage`].join(" · ");
}

export function AllocationBadge({ allocation }: { allocation: string }) {
  return (
    <Badge variant="outline" color={allocation === "DEDICATED" ? "grape" : "cyan"} size="sm">
      {allocationLabel(allocation)}
    </Badge>
  );
}

/** The SKU's icon; a generic one when it has none or its image does not load. */
export function SkuIcon({ url, size = 48 }: { url?: string | null; size?: number }) {
  const [failed, setFailed] = useState<string | null>(null);
  if (!url || failed === url) {
    return (
      <ThemeIcon size={size} radius="md" variant="light" data-testid="sku-icon-fallback" aria-hidden>
        <IconServer2 size={Math.round(size * 0.6)} />
      </ThemeIcon>
    );
  }
  return (
    <img
      src={url}
      alt=""
      width={size}
      height={size}
      referrerPolicy="no-referrer"
      loading="lazy"
      style={{ objectFit: "contain", borderRadius: "var(--mantine-radius-md)", flex: "none" }}
      onError={() => setFailed(url)}
    />
  );
}
