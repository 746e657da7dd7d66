/* Storage and CPU/memory editors shared by the instance template form, the "Launch service" form
 * and a stopped service's edit dialog: where the workspace lives (ephemeral, a new volume kept or
 * released on delete, or an existing claim of the compute instance's namespace) and the
 * container's CPU and memory requests and limits. The server checks every value; its messages show
 * next to the field (errors keyed "storage.size", "resources.cpuLimit"...). */
import { Group, Radio, Select, SimpleGrid, Stack, Text, TextInput } from "@mantine/core";

import type { ReclaimPolicy, ServiceResourcesInput, ServiceStorageInput, StorageMode } from "../../gql/graphql";

export interface StorageRow {
  mode: StorageMode;
  size: string;
  reclaim: ReclaimPolicy;
  claimName: string;
  storageClass: string;
}

export interface ResourcesRow {
  cpuRequest: string;
  cpuLimit: string;
  memoryRequest: string;
  memoryLimit: string;
}

type StorageIn = { mode: StorageMode; size?: string | null; reclaim: ReclaimPolicy; claimName?: string | null; storageClass?: string | null };
type ResourcesIn = { cpuRequest?: string | null; cpuLimit?: string | null; memoryRequest?: string | null; memoryLimit?: string | null };

export const DEFAULT_STORAGE: StorageRow = { mode: "NEW_VOLUME", size: "", reclaim: "RELEASE", claimName: "", storageClass: "" };
export const NO_RESOURCES: ResourcesRow = { cpuRequest: "", cpuLimit: "", memoryRequest: "", memoryLimit: "" };

export function toStorageRow(storage: StorageIn | null | undefined): StorageRow {
  if (!storage) return DEFAULT_STORAGE;
  return {
    mode: storage.mode,
    size: storage.size ?? "",
    reclaim: storage.reclaim,
    claimName: storage.claimName ?? "",
    storageClass: storage.storageClass ?? "",
  };
}

export function toResourcesRow(resources: ResourcesIn | null | undefined): ResourcesRow {
  return {
    cpuRequest: resources?.cpuRequest ?? "",
    cpuLimit: resources?.cpuLimit ?? "",
    memoryRequest: resources?.memoryRequest ?? "",
    memoryLimit: resources?.memoryLimit ?? "",
  };
}

/** The API's input; what a mode does not use is left out (the server refuses it otherwise). */
export function storageInput(row: StorageRow): ServiceStorageInput {
  const text = (value: string) => value.trim() || null;
  return {
    mode: row.mode,
    size: row.mode === "EXISTING_CLAIM" ? null : text(row.size),
    reclaim: row.mode === "NEW_VOLUME" ? row.reclaim : "RELEASE",
    claimName: row.mode === "EPHEMERAL" ? null : text(row.claimName),
    storageClass: row.mode === "NEW_VOLUME" ? text(row.storageClass) : null,
  };
}

export function resourcesInput(row: ResourcesRow): ServiceResourcesInput {
  const text = (value: string) => value.trim() || null;
  return {
    cpuRequest: text(row.cpuRequest),
    cpuLimit: text(row.cpuLimit),
    memoryRequest: text(row.memoryRequest),
    memoryLimit: text(row.memoryLimit),
  };
}

const MODES: { value: StorageMode; label: string }[] = [
  { value: "NEW_VOLUME", label: "New volume" },
  { value: "EPHEMERAL", label: "Ephemeral" },
  { value: "EXISTING_CLAIM", label: "Existing claim" },
];

export function storageSummary(storage: StorageIn): string {
  switch (storage.mode) {
    case "EPHEMERAL":
      return `Ephemeral${storage.size ? ` (${storage.size})` : ""}: gone at every stop or restart`;
    case "EXISTING_CLAIM":
      return `Existing claim "${storage.claimName ?? ""}"`;
    default:
      return `New volume${storage.claimName ? ` "${storage.claimName}"` : ""} of ${storage.size ?? "the GPUs' share of the compute instance's storage"}${
        storage.storageClass ? `, class ${storage.storageClass}` : ""
      }, ${storage.reclaim === "KEEP" ? "kept" : "released"} on delete`;
  }
}

/** Storage mode, size, reclaim and claim. `claims`: the claims of the compute instance's
 * namespace, offered for an existing claim (a free text field when not known). `locked`: why the
 * mode and size cannot change (a volume that exists), or null. */
export function StorageEditor({
  value,
  onChange,
  errors,
  claims,
  locked = null,
}: {
  value: StorageRow;
  onChange: (value: StorageRow) => void;
  errors: Record<string, string>;
  claims?: readonly { name: string; size?: string | null; serviceId?: string | null }[];
  locked?: string | null;
}) {
  const set = (change: Partial<StorageRow>) => onChange({ ...value, ...change });
  return (
    <Stack gap="sm" data-testid="storage-editor">
      <Radio.Group
        label="Storage"
        description={
          locked ??
          "Where the workspace at the mount path lives: a new volume survives stops and restarts; an ephemeral one is gone with its pod."
        }
        value={value.mode}
        onChange={(mode) => set({ mode: mode as StorageMode })}
        error={errors["storage.mode"] ?? errors.storage}
      >
        <Group mt="xs">
          {MODES.map((mode) => (
            <Radio key={mode.value} value={mode.value} label={mode.label} disabled={locked !== null && mode.value !== value.mode} />
          ))}
        </Group>
      </Radio.Group>
      {value.mode !== "EXISTING_CLAIM" && (
        <TextInput
          label={value.mode === "EPHEMERAL" ? "Size limit" : "Volume size"}
          description={
            value.mode === "EPHEMERAL"
              ? 'A quantity such as "10Gi", counted as the container\'s scratch space; empty: no limit.'
              : 'A quantity such as "50Gi", within the compute instance\'s storage; empty: the GPUs\' share of it.'
          }
          placeholder={value.mode === "EPHEMERAL" ? "No limit" : "The GPUs' share"}
          value={value.size}
          disabled={locked !== null}
          onChange={(event) => set({ size: event.currentTarget.value })}
          error={errors["storage.size"]}
          maw={320}
        />
      )}
      {value.mode === "NEW_VOLUME" && (
        <>
          <Radio.Group
            label="When the service is deleted"
            value={value.reclaim}
            onChange={(reclaim) => set({ reclaim: reclaim as ReclaimPolicy })}
            error={errors["storage.reclaim"]}
          >
            <Group mt="xs">
              <Radio value="RELEASE" label="Release the volume (delete it)" />
              <Radio value="KEEP" label="Keep the volume (for another service to mount)" />
            </Group>
          </Radio.Group>
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            <TextInput
              label="Claim name"
              description="Empty: <service name>-workspace."
              value={value.claimName}
              disabled={locked !== null}
              onChange={(event) => set({ claimName: event.currentTarget.value })}
              error={errors["storage.claimName"]}
            />
            <TextInput
              label="Storage class"
              description="Empty: the cluster's default."
              value={value.storageClass}
              disabled={locked !== null}
              onChange={(event) => set({ storageClass: event.currentTarget.value })}
              error={errors["storage.storageClass"]}
            />
          </SimpleGrid>
        </>
      )}
      {value.mode === "EXISTING_CLAIM" &&
        (claims && claims.length > 0 ? (
          <Select
            label="Claim"
            description="A claim of the compute instance's namespace; it is never created nor deleted by the service."
            required
            searchable
            maw={480}
            value={value.claimName || null}
            onChange={(name) => set({ claimName: name ?? "" })}
            data={claims.map((c) => ({
              value: c.name,
              label: `${c.name}${c.size ? ` (${c.size})` : ""}${c.serviceId ? ", a service's workspace" : ", kept"}`,
            }))}
            error={errors["storage.claimName"]}
          />
        ) : (
          <TextInput
            label="Claim name"
            description="The name of a PersistentVolumeClaim of the compute instance's namespace (its page lists them)."
            required
            maw={480}
            value={value.claimName}
            onChange={(event) => set({ claimName: event.currentTarget.value })}
            error={errors["storage.claimName"]}
          />
        ))}
    </Stack>
  );
}

/** CPU and memory requests and limits; empty fields follow the others (or the GPUs' share). */
export function ResourcesEditor({ value, onChange, errors }: { value: ResourcesRow; onChange: (value: ResourcesRow) => void; errors: Record<string, string> }) {
  const field = (key: keyof ResourcesRow, label: string, placeholder: string) => (
    <TextInput
      label={label}
      placeholder={placeholder}
      value={value[key]}
      onChange={(event) => onChange({ ...value, [key]: event.currentTarget.value })}
      error={errors[`resources.${key}`]}
    />
  );
  return (
    <Stack gap={4} data-testid="resources-editor">
      <Text size="sm" fw={500}>
        CPU and memory
      </Text>
      <Text size="xs" c="dimmed">
        Quantities such as &quot;500m&quot; or &quot;2&quot; CPUs and &quot;8Gi&quot; of memory, within the compute instance&apos;s. A request left empty is
        its limit, a limit its request; both empty: the GPUs&apos; share of the compute instance.
      </Text>
      <SimpleGrid cols={{ base: 2, sm: 4 }}>
        {field("cpuRequest", "CPU request", "e.g. 2")}
        {field("cpuLimit", "CPU limit", "e.g. 4")}
        {field("memoryRequest", "Memory request", "e.g. 8Gi")}
        {field("memoryLimit", "Memory limit", "e.g. 16Gi")}
      </SimpleGrid>
    </Stack>
  );
}
