/* The container spec editors shared by the instance template form and the "Launch service" form's
 * overrides: the start command (one row per argument), ports (with access params) and env, with the
 * {{generated_token}} help and an insert button next to each place it is filled in. */
import {
  ActionIcon,
  Badge,
  Button,
  Code,
  Group,
  NumberInput,
  Paper,
  Select,
  Stack,
  Text,
  TextInput,
  Tooltip,
} from "@mantine/core";
import { IconKey, IconPlus, IconTrash } from "@tabler/icons-react";
import { useRef, type FocusEvent, type ReactNode } from "react";

import { KeyValueEditor, type Pair } from "../../components/KeyValueEditor";
import type { ContainerPortInput, ImagePullPolicy, Protocol, Vendor } from "../../gql/graphql";

export const PLACEHOLDER = "{{generated_token}}";

export const VENDORS: Vendor[] = ["NVIDIA", "AMD", "INTEL", "ASCEND", "CPU"];

const VENDOR_COLORS: Record<Vendor, string> = {
  NVIDIA: "green",
  AMD: "red",
  INTEL: "blue",
  ASCEND: "grape",
  CPU: "gray",
};

export function VendorBadge({ vendor }: { vendor: Vendor }) {
  return (
    <Badge color={VENDOR_COLORS[vendor] ?? "gray"} variant="light" data-vendor={vendor} style={{ flexShrink: 0 }}>
      {vendor}
    </Badge>
  );
}

export const PULL_POLICIES: { value: ImagePullPolicy; label: string }[] = [
  { value: "ALWAYS", label: "Always" },
  { value: "IF_NOT_PRESENT", label: "IfNotPresent" },
  { value: "NEVER", label: "Never" },
];

export function pullPolicyLabel(policy: ImagePullPolicy): string {
  return PULL_POLICIES.find((p) => p.value === policy)?.label ?? policy;
}

export const PROTOCOLS: Protocol[] = ["TCP", "UDP", "SCTP"];

/** A port as the form edits it (the number as typed: "" while empty). */
export interface PortRow {
  name: string;
  port: number | "";
  protocol: Protocol;
  accessParams: Pair[];
}

export function toPortRows(
  ports: readonly { name: string; port: number; protocol: Protocol; accessParams: readonly Pair[] }[] | null | undefined,
): PortRow[] {
  return (ports ?? []).map((p) => ({
    name: p.name,
    port: p.port,
    protocol: p.protocol,
    accessParams: p.accessParams.map(({ key, value }) => ({ key, value })),
  }));
}

export function portsInput(rows: PortRow[]): ContainerPortInput[] {
  return rows.map((row) => ({
    name: row.name.trim(),
    // An empty number goes as 0: the server says "must be a port number from 1 to 65535" next to it.
    port: row.port === "" ? 0 : row.port,
    protocol: row.protocol,
    accessParams: row.accessParams.map(({ key, value }) => ({ key: key.trim(), value })),
  }));
}

export function pairsInput(pairs: Pair[]): Pair[] {
  return pairs.map(({ key, value }) => ({ key: key.trim(), value }));
}

/** The help next to every field that takes {{generated_token}}. */
export function PlaceholderHelp({ children }: { children?: ReactNode }) {
  return (
    <Text size="xs" c="dimmed">
      <Code>{PLACEHOLDER}</Code> is replaced by one random 32-hex-character value per service instance, the same
      everywhere it appears, kept across stop and start; e.g. JupyterLab&apos;s{" "}
      <Code>--ServerApp.token={PLACEHOLDER}</Code> with access param <Code>token={PLACEHOLDER}</Code> makes the
      Connect link log in. {children}
    </Text>
  );
}

type Editable = HTMLInputElement | HTMLTextAreaElement;

/** Remembers the field of a section that was focused last (and its caret), so that the section's
 * "Insert {{generated_token}}" button puts the placeholder where the person was typing. `indexOf`
 * says which row a focused field edits (null: a field that takes no placeholder). */
export function usePlaceholderTarget(indexOf: (field: Editable) => number | null) {
  const last = useRef<{ field: Editable; index: number } | null>(null);
  const onFocus = (event: FocusEvent<HTMLElement>) => {
    const field = event.target;
    if (!(field instanceof HTMLInputElement || field instanceof HTMLTextAreaElement)) return;
    const index = indexOf(field);
    last.current = index === null ? null : { field, index };
  };
  /** Where to insert: the row and the new text, or null when no field of the section was focused. */
  const insert = (text: (index: number) => string | undefined): { index: number; text: string; caret: number } | null => {
    const target = last.current;
    if (!target || !target.field.isConnected) return null;
    const current = text(target.index);
    if (current === undefined) return null;
    const start = target.field.selectionStart ?? current.length;
    const end = target.field.selectionEnd ?? start;
    return {
      index: target.index,
      text: current.slice(0, start) + PLACEHOLDER + current.slice(end),
      caret: start + PLACEHOLDER.length,
    };
  };
  /** Puts the focus back into the field, after the inserted placeholder. */
  const refocus = (caret: number) => {
    const field = last.current?.field;
    if (!field) return;
    requestAnimationFrame(() => {
      if (!field.isConnected) return;
      field.focus();
      field.setSelectionRange(caret, caret);
    });
  };
  return { onFocus, insert, refocus };
}

export function InsertPlaceholderButton({ label, onClick }: { label: string; onClick: () => void }) {
  return (
    <Tooltip label="At the cursor in the field you were editing, or as a new row" withArrow>
      <Button
        size="xs"
        variant="subtle"
        leftSection={<IconKey size={14} />}
        aria-label={label}
        // Keep the caret of the field being edited: the click must not take the focus first.
        onMouseDown={(event) => event.preventDefault()}
        onClick={onClick}
      >
        Insert {PLACEHOLDER}
      </Button>
    </Tooltip>
  );
}

function rowIndex(field: Editable, pattern: RegExp): number | null {
  const match = pattern.exec(field.getAttribute("aria-label") ?? "");
  return match ? Number(match[1]) - 1 : null;
}

/** The start command: one row per argument, passed as they are (no shell quoting). */
export function CommandEditor({
  value,
  onChange,
  errors,
  label = "Start command",
  description,
}: {
  value: string[];
  onChange: (command: string[]) => void;
  errors: Record<string, string>;
  label?: string;
  description?: ReactNode;
}) {
  const target = usePlaceholderTarget((field) => rowIndex(field, /^Start command argument (\d+)$/));
  const insert = () => {
    const found = target.insert((index) => value[index]);
    if (found) {
      onChange(value.map((arg, i) => (i === found.index ? found.text : arg)));
      target.refocus(found.caret);
    } else {
      onChange([...value, PLACEHOLDER]);
    }
  };
  return (
    <Stack gap={6} onFocus={target.onFocus}>
      <Group justify="space-between" gap="xs">
        <Text size="sm" fw={500}>
          {label}
        </Text>
        <InsertPlaceholderButton label="Insert {{generated_token}} into the start command" onClick={insert} />
      </Group>
      <Text size="xs" c="dimmed">
        {description ??
          "One row per argument, passed as is (no shell quoting): the first row is the program. Replaces the image's entrypoint; leave it empty to keep the image's own. Pasting several lines adds one argument per line."}
      </Text>
      <PlaceholderHelp />
      {value.length === 0 && (
        <Text size="sm" c="dimmed" fs="italic">
          No command: the image&apos;s entrypoint runs.
        </Text>
      )}
      {value.map((arg, index) => (
        <Group key={index} gap="xs" align="flex-start" wrap="nowrap">
          <Text size="xs" c="dimmed" w={22} mt={8} ta="right" aria-hidden>
            {index + 1}
          </Text>
          <TextInput
            aria-label={`Start command argument ${index + 1}`}
            placeholder={index === 0 ? "program, e.g. jupyter" : "argument"}
            value={arg}
            styles={{ input: { fontFamily: "var(--mantine-font-family-monospace)" } }}
            style={{ flex: 1 }}
            error={errors[`command.${index}`]}
            onChange={(event) => onChange(value.map((a, i) => (i === index ? event.currentTarget.value : a)))}
            onPaste={(event) => {
              const text = event.clipboardData.getData("text");
              if (!text.includes("\n")) return;
              event.preventDefault();
              const lines = text.split(/\r?\n/).filter((line) => line.trim() !== "");
              const before = arg.slice(0, event.currentTarget.selectionStart ?? arg.length);
              const merged = lines.length ? [before + lines[0], ...lines.slice(1)] : [before];
              onChange([...value.slice(0, index), ...merged, ...value.slice(index + 1)]);
            }}
          />
          <ActionIcon
            variant="subtle"
            color="red"
            mt={4}
            aria-label={`Remove argument ${index + 1}`}
            onClick={() => onChange(value.filter((_, i) => i !== index))}
          >
            <IconTrash size={16} />
          </ActionIcon>
        </Group>
      ))}
      {errors.command && (
        <Text size="xs" c="red">
          {errors.command}
        </Text>
      )}
      <Group>
        <Button size="xs" variant="light" leftSection={<IconPlus size={14} />} onClick={() => onChange([...value, ""])}>
          Add argument
        </Button>
      </Group>
    </Stack>
  );
}

/** Environment variables (KeyValueEditor) with the placeholder help and insert button. */
export function EnvEditor({
  value,
  onChange,
  errors,
}: {
  value: Pair[];
  onChange: (env: Pair[]) => void;
  errors: Record<string, string>;
}) {
  const target = usePlaceholderTarget((field) => rowIndex(field, /^Environment variables (\d+) value$/));
  const insert = () => {
    const found = target.insert((index) => value[index]?.value);
    if (found) {
      onChange(value.map((pair, i) => (i === found.index ? { ...pair, value: found.text } : pair)));
      target.refocus(found.caret);
    } else {
      onChange([...value, { key: "", value: PLACEHOLDER }]);
    }
  };
  return (
    <Stack gap={6} onFocus={target.onFocus}>
      <KeyValueEditor
        label="Environment variables"
        name="env"
        value={value}
        onChange={onChange}
        errors={errors}
        keyLabel="Name"
        valueLabel="Value"
        description="Set in the container. Values may hold the placeholder (names may not)."
      />
      <PlaceholderHelp />
      <Group justify="flex-end">
        <InsertPlaceholderButton label="Insert {{generated_token}} into the environment variables" onClick={insert} />
      </Group>
    </Stack>
  );
}

function PortCard({
  row,
  index,
  onChange,
  onRemove,
  errors,
}: {
  row: PortRow;
  index: number;
  onChange: (row: PortRow) => void;
  onRemove: () => void;
  errors: Record<string, string>;
}) {
  const base = `ports.${index}`;
  const paramsLabel = `Port ${index + 1} access params`;
  const target = usePlaceholderTarget((field) => rowIndex(field, new RegExp(`^${paramsLabel} (\\d+) value$`)));
  const insert = () => {
    const found = target.insert((i) => row.accessParams[i]?.value);
    if (found) {
      onChange({
        ...row,
        accessParams: row.accessParams.map((pair, i) => (i === found.index ? { ...pair, value: found.text } : pair)),
      });
      target.refocus(found.caret);
    } else {
      const hasToken = row.accessParams.some((pair) => pair.key === "token");
      onChange({ ...row, accessParams: [...row.accessParams, { key: hasToken ? "" : "token", value: PLACEHOLDER }] });
    }
  };
  return (
    <Paper withBorder p="sm" radius="md" data-testid={`port-${index}`}>
      <Stack gap="xs">
        <Group align="flex-start" gap="xs" wrap="wrap">
          <TextInput
            label="Name"
            aria-label={`Port ${index + 1} name`}
            placeholder="jupyter"
            value={row.name}
            onChange={(event) => onChange({ ...row, name: event.currentTarget.value })}
            error={errors[`${base}.name`]}
            style={{ flex: "2 1 180px" }}
          />
          <NumberInput
            label="Port"
            aria-label={`Port ${index + 1} number`}
            placeholder="8888"
            min={1}
            max={65535}
            allowDecimal={false}
            allowNegative={false}
            value={row.port}
            onChange={(value) => onChange({ ...row, port: typeof value === "number" ? value : value === "" ? "" : Number(value) })}
            error={errors[`${base}.port`]}
            style={{ flex: "1 1 110px" }}
          />
          <Select
            label="Protocol"
            aria-label={`Port ${index + 1} protocol`}
            data={PROTOCOLS}
            allowDeselect={false}
            value={row.protocol}
            onChange={(value) => value && onChange({ ...row, protocol: value as Protocol })}
            error={errors[`${base}.protocol`]}
            style={{ flex: "1 1 100px" }}
          />
          <ActionIcon
            variant="subtle"
            color="red"
            mt={28}
            aria-label={`Remove port ${index + 1}`}
            onClick={onRemove}
          >
            <IconTrash size={16} />
          </ActionIcon>
        </Group>
        {errors[base] && (
          <Text size="xs" c="red">
            {errors[base]}
          </Text>
        )}
        <Stack gap={4} onFocus={target.onFocus}>
          <KeyValueEditor
            label={paramsLabel}
            name={`${base}.accessParams`}
            value={row.accessParams}
            onChange={(accessParams) => onChange({ ...row, accessParams })}
            errors={errors}
            keyLabel="Key"
            valueLabel="Value"
            description="The query string of this port's Connect link (?key=value)."
          />
          <Group justify="flex-end">
            <InsertPlaceholderButton label={`Insert {{generated_token}} into port ${index + 1} access params`} onClick={insert} />
          </Group>
        </Stack>
      </Stack>
    </Paper>
  );
}

/** Container ports, each with its access params. */
export function PortsEditor({
  value,
  onChange,
  errors,
  label = "Ports",
}: {
  value: PortRow[];
  onChange: (ports: PortRow[]) => void;
  errors: Record<string, string>;
  /** null: the section around it has the title. */
  label?: string | null;
}) {
  return (
    <Stack gap="xs">
      {label && (
        <Text size="sm" fw={500}>
          {label}
        </Text>
      )}
      <Text size="xs" c="dimmed">
        Network ports the container exposes. Web ports (named http, https, web, ui, jupyter…, or a well-known web port,
        or with access params) get a Connect link; ssh ports (named ssh, or port 22) an ssh command. Access param
        values may hold the placeholder.
      </Text>
      <PlaceholderHelp />
      {value.length === 0 && (
        <Text size="sm" c="dimmed" fs="italic">
          No ports: the service gets no Connect link.
        </Text>
      )}
      {value.map((row, index) => (
        <PortCard
          key={index}
          row={row}
          index={index}
          errors={errors}
          onChange={(next) => onChange(value.map((r, i) => (i === index ? next : r)))}
          onRemove={() => onChange(value.filter((_, i) => i !== index))}
        />
      ))}
      {errors.ports && (
        <Text size="xs" c="red">
          {errors.ports}
        </Text>
      )}
      <Group>
        <Button
          size="xs"
          variant="light"
          leftSection={<IconPlus size={14} />}
          onClick={() => onChange([...value, { name: "", port: "", protocol: "TCP", accessParams: [] }])}
        >
          Add port
        </Button>
      </Group>
    </Stack>
  );
}
