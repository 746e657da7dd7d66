import {
  ActionIcon,
  Button,
  Checkbox,
  Group,
  NumberInput,
  Paper,
  Select,
  SimpleGrid,
  Stack,
  TagsInput,
  Text,
  TextInput,
} from "@mantine/core";
import { IconPlus, IconTrash } from "@tabler/icons-react";

import type { InputType } from "../../gql/graphql";

/** Editors for a template version's input and output definitions. Server errors are keyed
 * "inputs.<index>.<field>" and "outputs.<index>.<field>". */

export interface InputDraft {
  name: string;
  type: InputType;
  description: string;
  required: boolean;
  default: string;
  options: string[];
  pattern: string;
  min: number | "";
  max: number | "";
  sensitive: boolean;
}

export interface OutputDraft {
  name: string;
  value: string;
  description: string;
}

export const INPUT_TYPES: { value: InputType; label: string }[] = [
  { value: "STRING", label: "String" },
  { value: "NUMBER", label: "Number" },
  { value: "BOOLEAN", label: "Boolean" },
  { value: "QUANTITY", label: "Quantity (e.g. 10Gi, 500m)" },
];

export function emptyInput(): InputDraft {
  return {
    name: "",
    type: "STRING",
    description: "",
    required: false,
    default: "",
    options: [],
    pattern: "",
    min: "",
    max: "",
    sensitive: false,
  };
}

function errorAt(errors: Record<string, string>, key: string): string | undefined {
  const found = Object.entries(errors)
    .filter(([k]) => k === key || k.startsWith(`${key}.`))
    .map(([, message]) => message);
  return found.length ? found.join("; ") : undefined;
}

export function InputsEditor({
  value,
  onChange,
  errors,
}: {
  value: InputDraft[];
  onChange: (inputs: InputDraft[]) => void;
  errors: Record<string, string>;
}) {
  const update = (index: number, change: Partial<InputDraft>) =>
    onChange(value.map((item, i) => (i === index ? { ...item, ...change } : item)));
  return (
    <Stack gap="sm">
      <div>
        <Text fw={500} size="sm">
          Inputs
        </Text>
        <Text size="xs" c="dimmed">
          What users (or the compute profile) give; use them in the manifests as {"{{ inputs.<name> }}"}.
        </Text>
      </div>
      {value.length === 0 && (
        <Text size="sm" c="dimmed">
          No inputs.
        </Text>
      )}
      {value.map((input, index) => {
        const key = `inputs.${index}`;
        const n = index + 1;
        return (
          <Paper key={index} withBorder p="sm" radius="md" data-testid={`input-definition-${n}`}>
            <Stack gap="xs">
              <Group justify="space-between">
                <Text size="sm" fw={600}>
                  Input {n}
                  {input.name ? `: ${input.name}` : ""}
                </Text>
                <ActionIcon
                  variant="subtle"
                  color="red"
                  aria-label={`Remove input ${n}`}
                  onClick={() => onChange(value.filter((_, i) => i !== index))}
                >
                  <IconTrash size={16} />
                </ActionIcon>
              </Group>
              <SimpleGrid cols={{ base: 1, sm: 3 }}>
                <TextInput
                  label="Name"
                  aria-label={`Input ${n} name`}
                  required
                  value={input.name}
                  error={errorAt(errors, `${key}.name`)}
                  onChange={(e) => update(index, { name: e.currentTarget.value })}
                />
                <Select
                  label="Type"
                  aria-label={`Input ${n} type`}
                  data={INPUT_TYPES}
                  value={input.type}
                  allowDeselect={false}
                  error={errorAt(errors, `${key}.type`)}
                  onChange={(type) => type && update(index, { type: type as InputType })}
                />
                <TextInput
                  label="Default"
                  aria-label={`Input ${n} default`}
                  // A sensitive default is not shown on the screen as it is typed.
                  type={input.sensitive ? "password" : "text"}
                  autoComplete="off"
                  value={input.default}
                  error={errorAt(errors, `${key}.default`)}
                  onChange={(e) => update(index, { default: e.currentTarget.value })}
                />
              </SimpleGrid>
              <TextInput
                label="Description"
                aria-label={`Input ${n} description`}
                value={input.description}
                error={errorAt(errors, `${key}.description`)}
                onChange={(e) => update(index, { description: e.currentTarget.value })}
              />
              <SimpleGrid cols={{ base: 1, sm: 2 }}>
                <TagsInput
                  label="Options"
                  aria-label={`Input ${n} options`}
                  description="The only values allowed (optional). Enter after each."
                  value={input.options}
                  error={errorAt(errors, `${key}.options`)}
                  onChange={(options) => update(index, { options })}
                />
                <TextInput
                  label="Pattern"
                  aria-label={`Input ${n} pattern`}
                  description="A regular expression (STRING and QUANTITY inputs)."
                  value={input.pattern}
                  error={errorAt(errors, `${key}.pattern`)}
                  onChange={(e) => update(index, { pattern: e.currentTarget.value })}
                />
                <NumberInput
                  label="Min"
                  aria-label={`Input ${n} min`}
                  description="NUMBER inputs only."
                  value={input.min}
                  error={errorAt(errors, `${key}.min`)}
                  onChange={(min) => update(index, { min: typeof min === "number" ? min : "" })}
                />
                <NumberInput
                  label="Max"
                  aria-label={`Input ${n} max`}
                  description="NUMBER inputs only."
                  value={input.max}
                  error={errorAt(errors, `${key}.max`)}
                  onChange={(max) => update(index, { max: typeof max === "number" ? max : "" })}
                />
              </SimpleGrid>
              <Group>
                <Checkbox
                  label="Required"
                  aria-label={`Input ${n} required`}
                  checked={input.required}
                  error={errorAt(errors, `${key}.required`)}
                  onChange={(e) => update(index, { required: e.currentTarget.checked })}
                />
                <Checkbox
                  label="Sensitive (masked when shown)"
                  aria-label={`Input ${n} sensitive`}
                  checked={input.sensitive}
                  error={errorAt(errors, `${key}.sensitive`)}
                  onChange={(e) => update(index, { sensitive: e.currentTarget.checked })}
                />
              </Group>
            </Stack>
          </Paper>
        );
      })}
      {errors.inputs && (
        <Text size="xs" c="red" role="alert">
          {errors.inputs}
        </Text>
      )}
      <Group>
        <Button size="xs" variant="light" leftSection={<IconPlus size={14} />} onClick={() => onChange([...value, emptyInput()])}>
          Add input
        </Button>
      </Group>
    </Stack>
  );
}

export function OutputsEditor({
  value,
  onChange,
  errors,
}: {
  value: OutputDraft[];
  onChange: (outputs: OutputDraft[]) => void;
  errors: Record<string, string>;
}) {
  const update = (index: number, change: Partial<OutputDraft>) =>
    onChange(value.map((item, i) => (i === index ? { ...item, ...change } : item)));
  return (
    <Stack gap="sm">
      <div>
        <Text fw={500} size="sm">
          Outputs
        </Text>
        <Text size="xs" c="dimmed">
          Values shown to users once an instance is deployed, e.g. {"{{ instance.namespace }}"}.
        </Text>
      </div>
      {value.length === 0 && (
        <Text size="sm" c="dimmed">
          No outputs.
        </Text>
      )}
      {value.map((output, index) => {
        const key = `outputs.${index}`;
        const n = index + 1;
        return (
          <Paper key={index} withBorder p="sm" radius="md" data-testid={`output-definition-${n}`}>
            <Group align="flex-start" wrap="nowrap" gap="xs">
              <SimpleGrid cols={{ base: 1, sm: 3 }} style={{ flex: 1 }}>
                <TextInput
                  label="Name"
                  aria-label={`Output ${n} name`}
                  required
                  value={output.name}
                  error={errorAt(errors, `${key}.name`)}
                  onChange={(e) => update(index, { name: e.currentTarget.value })}
                />
                <TextInput
                  label="Value"
                  aria-label={`Output ${n} value`}
                  required
                  placeholder="{{ instance.namespace }}"
                  styles={{ input: { fontFamily: "var(--mantine-font-family-monospace)" } }}
                  value={output.value}
                  error={errorAt(errors, `${key}.value`)}
                  onChange={(e) => update(index, { value: e.currentTarget.value })}
                />
                <TextInput
                  label="Description"
                  aria-label={`Output ${n} description`}
                  value={output.description}
                  error={errorAt(errors, `${key}.description`)}
                  onChange={(e) => update(index, { description: e.currentTarget.value })}
                />
              </SimpleGrid>
              <ActionIcon
                variant="subtle"
                color="red"
                mt={28}
                aria-label={`Remove output ${n}`}
                onClick={() => onChange(value.filter((_, i) => i !== index))}
              >
                <IconTrash size={16} />
              </ActionIcon>
            </Group>
          </Paper>
        );
      })}
      {errors.outputs && (
        <Text size="xs" c="red" role="alert">
          {errors.outputs}
        </Text>
      )}
      <Group>
        <Button
          size="xs"
          variant="light"
          leftSection={<IconPlus size={14} />}
          onClick={() => onChange([...value, { name: "", value: "", description: "" }])}
        >
          Add output
        </Button>
      </Group>
    </Stack>
  );
}
