import { ActionIcon, Button, Group, Stack, Text, TextInput } from "@mantine/core";
import { IconPlus, IconTrash } from "@tabler/icons-react";

export interface Pair {
  key: string;
  value: string;
}

/** Rows of key/value pairs (labels, annotations, env, access params), errors per row from the
 * server ("<name>.<index>.key"). */
export function KeyValueEditor({
  label,
  name,
  value,
  onChange,
  errors = {},
  keyLabel = "Key",
  valueLabel = "Value",
  description,
}: {
  label: string;
  name: string;
  value: Pair[];
  onChange: (pairs: Pair[]) => void;
  errors?: Record<string, string>;
  keyLabel?: string;
  valueLabel?: string;
  description?: string;
}) {
  const update = (index: number, change: Partial<Pair>) =>
    onChange(value.map((pair, i) => (i === index ? { ...pair, ...change } : pair)));
  return (
    <Stack gap={6}>
      <Text size="sm" fw={500}>
        {label}
      </Text>
      {description && (
        <Text size="xs" c="dimmed">
          {description}
        </Text>
      )}
      {value.map((pair, index) => (
        <Group key={index} align="flex-start" gap="xs" wrap="nowrap">
          <TextInput
            aria-label={`${label} ${index + 1} ${keyLabel.toLowerCase()}`}
            placeholder={keyLabel}
            value={pair.key}
            onChange={(event) => update(index, { key: event.currentTarget.value })}
            error={errors[`${name}.${index}.key`] ?? errors[`${name}.${index}`]}
            style={{ flex: 1 }}
          />
          <TextInput
            aria-label={`${label} ${index + 1} ${valueLabel.toLowerCase()}`}
            placeholder={valueLabel}
            value={pair.value}
            onChange={(event) => update(index, { value: event.currentTarget.value })}
            error={errors[`${name}.${index}.value`]}
            style={{ flex: 2 }}
          />
          <ActionIcon
            variant="subtle"
            color="red"
            mt={4}
            aria-label={`Remove ${label.toLowerCase()} ${index + 1}`}
            onClick={() => onChange(value.filter((_, i) => i !== index))}
          >
            <IconTrash size={16} />
          </ActionIcon>
        </Group>
      ))}
      {errors[name] && (
        <Text size="xs" c="red">
          {errors[name]}
        </Text>
      )}
      <Group>
        <Button
          size="xs"
          variant="light"
          leftSection={<IconPlus size={14} />}
          onClick={() => onChange([...value, { key: "", value: "" }])}
        >
          Add {label.toLowerCase().replace(/s$/, "")}
        </Button>
      </Group>
    </Stack>
  );
}

export function toPairs(list: readonly { key: string; value: string }[] | null | undefined): Pair[] {
  return (list ?? []).map(({ key, value }) => ({ key, value }));
}
