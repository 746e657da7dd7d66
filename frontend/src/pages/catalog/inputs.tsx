import { Group, NumberInput, PasswordInput, Select, Stack, Switch, Table, Text, TextInput } from "@mantine/core";

/** What the API tells about one input: the template version's definition and the profile's setting. */
export interface InputDefinition {
  name: string;
  type: string;
  description?: string | null;
  required: boolean;
  default?: string | null;
  options: readonly string[];
  pattern?: string | null;
  min?: number | null;
  max?: number | null;
  sensitive: boolean;
}

export interface InputSetting {
  name: string;
  value?: string | null;
  required: boolean;
  override: string;
  allowedValues: readonly string[];
}

/** One input as a launch form shows it. */
export interface InputField {
  name: string;
  type: string;
  description: string | null;
  required: boolean;
  /** ALLOWED: any value of its type; RESTRICTED: one of `allowedValues`; NOT_ALLOWED: the profile's value. */
  override: "ALLOWED" | "RESTRICTED" | "NOT_ALLOWED";
  allowedValues: string[];
  /** The profile's value (or the template's default). */
  profileValue: string | null;
  options: string[];
  pattern: string | null;
  min: number | null;
  max: number | null;
  sensitive: boolean;
}

/** The mask the API shows for sensitive values. */
export const SENSITIVE_MASK = "********";

/** The template version's inputs, in its order, with the profile's settings (ALLOWED when it has none). */
export function inputFields(definitions: readonly InputDefinition[], settings: readonly InputSetting[]): InputField[] {
  const byName = new Map(settings.map((s) => [s.name, s]));
  return definitions.map((definition) => {
    const setting = byName.get(definition.name);
    const override = setting?.override === "NOT_ALLOWED" || setting?.override === "RESTRICTED" ? setting.override : "ALLOWED";
    return {
      name: definition.name,
      type: definition.type,
      description: definition.description ?? null,
      required: setting ? setting.required : definition.required,
      override,
      allowedValues: [...(setting?.allowedValues ?? [])],
      profileValue: setting?.value ?? definition.default ?? null,
      options: [...definition.options],
      pattern: definition.pattern ?? null,
      min: definition.min ?? null,
      max: definition.max ?? null,
      sensitive: definition.sensitive,
    };
  });
}

export function isOverridable(field: InputField): boolean {
  return field.override !== "NOT_ALLOWED";
}

/** The first values of a launch form: the profile's, but never a sensitive one. */
export function initialInputValues(fields: readonly InputField[]): Record<string, string> {
  const values: Record<string, string> = {};
  for (const field of fields) {
    if (!isOverridable(field)) continue;
    let value = field.sensitive ? "" : (field.profileValue ?? "");
    if (field.override === "RESTRICTED" && !field.allowedValues.includes(value)) value = "";
    if (field.type === "BOOLEAN" && !value) value = "false";
    values[field.name] = value;
  }
  return values;
}

/** Required inputs left empty that the profile gives no value for. */
export function missingInputs(fields: readonly InputField[], values: Record<string, string>): Record<string, string> {
  const missing: Record<string, string> = {};
  for (const field of fields) {
    if (!isOverridable(field) || !field.required) continue;
    const empty = !(values[field.name] ?? "").trim();
    if (empty && !(field.profileValue ?? "").trim()) missing[field.name] = "Required";
  }
  return missing;
}

/**
 * The server's errors about inputs, by input name: `inputs.<i>.value` and `inputs.<i>.key` name
 * the i-th input sent; `inputs` (`input "x" is required`) names it in its message. `remaining`
 * holds every other error (and the input errors no shown field can carry), for the summary.
 */
export function inputErrorsByName(
  errors: Record<string, string>,
  sent: readonly string[],
  shown: readonly string[],
): { byName: Record<string, string>; remaining: Record<string, string> } {
  const byName: Record<string, string> = {};
  const remaining: Record<string, string> = {};
  const add = (name: string, message: string) => {
    byName[name] = byName[name] ? `${byName[name]}; ${message}` : message;
  };
  for (const [key, message] of Object.entries(errors)) {
    const indexed = /^inputs\.(\d+)(\.(key|value))?$/.exec(key);
    const name = indexed ? sent[Number(indexed[1])] : undefined;
    if (name !== undefined && shown.includes(name)) {
      add(name, message);
      continue;
    }
    if (name !== undefined) {
      remaining[`input ${name}`] = message;
      continue;
    }
    if (key === "inputs") {
      const unplaced = message.split("; ").filter((one) => {
        const named = /input "([^"]+)"/.exec(one);
        if (named && shown.includes(named[1])) {
          add(named[1], one);
          return false;
        }
        return true;
      });
      if (unplaced.length) remaining[key] = unplaced.join("; ");
      continue;
    }
    remaining[key] = message;
  }
  return { byName, remaining };
}

function typeHint(field: InputField): string | null {
  const hints: string[] = [];
  if (field.type === "QUANTITY") hints.push("A quantity, like 64Gi, 500m or 8.");
  if (field.pattern) hints.push(`Must match ${field.pattern}.`);
  if (field.type === "NUMBER" && (field.min !== null || field.max !== null)) {
    if (field.min !== null && field.max !== null) hints.push(`From ${field.min} to ${field.max}.`);
    else if (field.min !== null) hints.push(`At least ${field.min}.`);
    else hints.push(`At most ${field.max}.`);
  }
  return hints.length ? hints.join(" ") : null;
}

/** The control of one overridable input, by its policy and type. */
export function InputControl({
  field,
  value,
  onChange,
  error,
  sensitiveHint,
  disabled,
}: {
  field: InputField;
  value: string;
  onChange: (value: string) => void;
  error?: string;
  sensitiveHint?: string;
  disabled?: boolean;
}) {
  const description =
    [field.description?.trim().replace(/([^.!?])$/, "$1."), typeHint(field), field.sensitive ? sensitiveHint : null].filter(Boolean).join(" ") ||
    undefined;
  const common = {
    label: field.name,
    description,
    error,
    withAsterisk: field.required,
    disabled,
  };
  if (field.override === "RESTRICTED" || (field.options.length > 0 && field.type !== "BOOLEAN")) {
    const choices = field.override === "RESTRICTED" ? field.allowedValues : field.options;
    return (
      <Select
        {...common}
        data={choices.map((choice) => ({ value: choice, label: choice }))}
        value={value || null}
        onChange={(next) => onChange(next ?? "")}
        clearable={!field.required}
        allowDeselect={!field.required}
        placeholder={field.override === "RESTRICTED" ? "Choose an allowed value" : "Choose a value"}
        comboboxProps={{ withinPortal: true }}
      />
    );
  }
  if (field.type === "BOOLEAN") {
    return (
      <Switch
        label={field.name}
        description={description}
        error={error}
        disabled={disabled}
        checked={value.toLowerCase() === "true"}
        onChange={(event) => onChange(event.currentTarget.checked ? "true" : "false")}
      />
    );
  }
  if (field.sensitive) {
    return (
      <PasswordInput
        {...common}
        value={value}
        autoComplete="new-password"
        onChange={(event) => onChange(event.currentTarget.value)}
      />
    );
  }
  if (field.type === "NUMBER") {
    return (
      <NumberInput
        {...common}
        value={value}
        min={field.min ?? undefined}
        max={field.max ?? undefined}
        onChange={(next) => onChange(next === "" ? "" : String(next))}
        placeholder={field.profileValue ?? undefined}
      />
    );
  }
  return (
    <TextInput
      {...common}
      value={value}
      placeholder={field.profileValue ?? (field.type === "QUANTITY" ? "e.g. 64Gi" : undefined)}
      onChange={(event) => onChange(event.currentTarget.value)}
    />
  );
}

/** Inputs users may not change, with the values they get (sensitive ones hidden). */
export function FixedInputs({
  fields,
  values,
  title = "Set by the profile",
}: {
  fields: readonly InputField[];
  values?: Record<string, string>;
  title?: string;
}) {
  if (fields.length === 0) return null;
  return (
    <Stack gap={6}>
      <Group gap="xs">
        <Text size="sm" fw={500}>
          {title}
        </Text>
        <Text size="xs" c="dimmed">
          (users may not change these)
        </Text>
      </Group>
      <Table.ScrollContainer minWidth={320}>
        <Table withTableBorder verticalSpacing={6} aria-label={title}>
          <Table.Tbody>
            {fields.map((field) => {
              const value = values?.[field.name] ?? field.profileValue;
              return (
                <Table.Tr key={field.name}>
                  <Table.Td w="40%">
                    <Text size="sm" ff="monospace">
                      {field.name}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm" c={value ? undefined : "dimmed"}>
                      {field.sensitive && value ? SENSITIVE_MASK : value || "—"}
                    </Text>
                  </Table.Td>
                </Table.Tr>
              );
            })}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
    </Stack>
  );
}
