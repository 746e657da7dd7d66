import {
  Alert,
  Badge,
  Checkbox,
  Group,
  MultiSelect,
  Paper,
  PasswordInput,
  Select,
  SimpleGrid,
  Stack,
  Switch,
  Table,
  TagsInput,
  Text,
  TextInput,
} from "@mantine/core";
import { IconInfoCircle } from "@tabler/icons-react";

import type { OverridePolicy } from "../../gql/graphql";
import type { InputDefinition, InputSettingState, OutputSettingState, TemplateVersion } from "./wizardModel";

const OVERRIDE_OPTIONS: { value: OverridePolicy; label: string }[] = [
  { value: "ALLOWED", label: "Allowed: users may change the value" },
  { value: "NOT_ALLOWED", label: "Not allowed: users get this value" },
  { value: "RESTRICTED", label: "Restricted: users pick one of the allowed values" },
];

function NoVersion() {
  return (
    <Alert color="blue" icon={<IconInfoCircle size={18} />}>
      Choose an environment template and its version in the General step first: its inputs and outputs are set here.
    </Alert>
  );
}

/** Input Settings: for each input the template version declares, its value, whether users must
 * give one, and whether (and how) they may override it. Errors are keyed by the input's index in
 * the version ("inputSettings.<index>.<field>"), the order in which they are sent. */
export function InputSettingsStep({
  version,
  settings,
  errors,
  onChange,
}: {
  version: TemplateVersion | null | undefined;
  settings: Record<string, InputSettingState>;
  errors: Record<string, string>;
  onChange: (name: string, change: Partial<InputSettingState>, errorKey: string) => void;
}) {
  if (!version) return <NoVersion />;
  if (version.inputs.length === 0) {
    return (
      <Alert color="gray" icon={<IconInfoCircle size={18} />}>
        Version {version.version} of this template declares no inputs: there is nothing to set.
      </Alert>
    );
  }
  return (
    <Stack>
      <Text size="sm" c="dimmed">
        Environment templates can expect inputs from users. Give defaults, decide which inputs users must fill in, and
        whether they may override the value you set.
      </Text>
      {version.inputs.map((defn, index) => (
        <InputSettingCard
          key={defn.name}
          defn={defn}
          index={index}
          setting={settings[defn.name] ?? { value: "", required: defn.required, override: "ALLOWED", allowedValues: [] }}
          errors={errors}
          onChange={(change, field) => onChange(defn.name, change, `inputSettings.${index}.${field}`)}
        />
      ))}
    </Stack>
  );
}

function InputSettingCard({
  defn,
  index,
  setting,
  errors,
  onChange,
}: {
  defn: InputDefinition;
  index: number;
  setting: InputSettingState;
  errors: Record<string, string>;
  onChange: (change: Partial<InputSettingState>, field: string) => void;
}) {
  const key = `inputSettings.${index}`;
  const allowedErrors = Object.entries(errors)
    .filter(([k]) => k === `${key}.allowedValues` || k.startsWith(`${key}.allowedValues.`))
    .map(([k, message]) => {
      const at = Number(k.split(".")[3]);
      return Number.isInteger(at) && setting.allowedValues[at] !== undefined ? `"${setting.allowedValues[at]}": ${message}` : message;
    });
  const hint = defn.default != null && defn.default !== "" ? `Template default: ${defn.default}` : "No default in the template";
  const valueLabel = `Value of ${defn.name}`;
  const valueProps = {
    label: "Value",
    "aria-label": valueLabel,
    description: hint,
    error: errors[`${key}.value`],
  };
  const choices = defn.type === "BOOLEAN" ? ["true", "false"] : defn.options;

  let valueInput;
  if (choices.length > 0) {
    valueInput = (
      <Select
        {...valueProps}
        placeholder={defn.default ? `Default (${defn.default})` : "Not set"}
        data={choices}
        value={setting.value || null}
        clearable
        onChange={(value) => onChange({ value: value ?? "" }, "value")}
      />
    );
  } else if (defn.sensitive) {
    valueInput = (
      <PasswordInput
        {...valueProps}
        placeholder={defn.default ? "Default" : "Not set"}
        value={setting.value}
        autoComplete="off"
        onChange={(event) => onChange({ value: event.currentTarget.value }, "value")}
      />
    );
  } else {
    valueInput = (
      <TextInput
        {...valueProps}
        placeholder={defn.default ? `Default (${defn.default})` : "Not set"}
        value={setting.value}
        onChange={(event) => onChange({ value: event.currentTarget.value }, "value")}
      />
    );
  }

  return (
    <Paper withBorder p="md" radius="md" data-testid={`input-setting-${defn.name}`}>
      <Stack gap="sm">
        <div>
          <Group gap="xs">
            <Text fw={600} ff="monospace">
              {defn.name}
            </Text>
            <Badge variant="light" size="sm" color="gray">
              {defn.type}
            </Badge>
            {defn.required && (
              <Badge variant="light" size="sm" color="orange">
                Required by the template
              </Badge>
            )}
            {defn.sensitive && (
              <Badge variant="light" size="sm" color="red">
                Sensitive
              </Badge>
            )}
          </Group>
          {defn.description && (
            <Text size="sm" c="dimmed">
              {defn.description}
            </Text>
          )}
          {(defn.pattern || defn.min != null || defn.max != null) && (
            <Text size="xs" c="dimmed">
              {[defn.pattern && `pattern ${defn.pattern}`, defn.min != null && `min ${defn.min}`, defn.max != null && `max ${defn.max}`]
                .filter(Boolean)
                .join(" · ")}
            </Text>
          )}
          {errors[`${key}.name`] && (
            <Text size="xs" c="red" role="alert">
              {errors[`${key}.name`]}
            </Text>
          )}
        </div>
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          {valueInput}
          <Select
            label="Override by users"
            aria-label={`Override policy of ${defn.name}`}
            data={OVERRIDE_OPTIONS}
            value={setting.override}
            allowDeselect={false}
            error={errors[`${key}.override`]}
            onChange={(value) => value && onChange({ override: value as OverridePolicy }, "override")}
          />
        </SimpleGrid>
        <Checkbox
          label="Users must give a value (required)"
          aria-label={`${defn.name} is required`}
          checked={setting.required || defn.required}
          disabled={defn.required}
          description={defn.required ? "The template requires this input." : undefined}
          error={errors[`${key}.required`]}
          onChange={(event) => onChange({ required: event.currentTarget.checked }, "required")}
        />
        {setting.override === "RESTRICTED" &&
          (defn.options.length > 0 || defn.type === "BOOLEAN" ? (
            <MultiSelect
              label="Allowed values"
              aria-label={`Allowed values of ${defn.name}`}
              description="Users choose one of these."
              data={choices}
              value={setting.allowedValues}
              required
              error={allowedErrors.join("; ") || undefined}
              onChange={(allowedValues) => onChange({ allowedValues }, "allowedValues")}
            />
          ) : (
            <TagsInput
              label="Allowed values"
              aria-label={`Allowed values of ${defn.name}`}
              description="Users choose one of these. Press Enter after each value."
              value={setting.allowedValues}
              required
              error={allowedErrors.join("; ") || undefined}
              onChange={(allowedValues) => onChange({ allowedValues }, "allowedValues")}
            />
          ))}
      </Stack>
    </Paper>
  );
}

/** Output Settings: which outputs of the template users see once their instance is deployed, and
 * under which name. */
export function OutputSettingsStep({
  version,
  settings,
  errors,
  onChange,
}: {
  version: TemplateVersion | null | undefined;
  settings: Record<string, OutputSettingState>;
  errors: Record<string, string>;
  onChange: (name: string, change: Partial<OutputSettingState>, errorKey: string) => void;
}) {
  if (!version) return <NoVersion />;
  if (version.outputs.length === 0) {
    return (
      <Alert color="gray" icon={<IconInfoCircle size={18} />}>
        Version {version.version} of this template declares no outputs: there is nothing to show users.
      </Alert>
    );
  }
  return (
    <Stack>
      <Text size="sm" c="dimmed">
        Choose what users see once their compute instance is deployed: the values the environment template produces.
      </Text>
      <Table.ScrollContainer minWidth={640}>
        <Table verticalSpacing="sm">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Output</Table.Th>
              <Table.Th w={110}>Visible</Table.Th>
              <Table.Th>Display name</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {version.outputs.map((out, index) => {
              const setting = settings[out.name] ?? { visible: true, displayName: "" };
              const key = `outputSettings.${index}`;
              return (
                <Table.Tr key={out.name}>
                  <Table.Td>
                    <Text ff="monospace" fw={500} size="sm">
                      {out.name}
                    </Text>
                    {out.description && (
                      <Text size="xs" c="dimmed">
                        {out.description}
                      </Text>
                    )}
                    {errors[`${key}.name`] && (
                      <Text size="xs" c="red" role="alert">
                        {errors[`${key}.name`]}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Switch
                      aria-label={`Show ${out.name} to users`}
                      checked={setting.visible}
                      error={errors[`${key}.visible`]}
                      onChange={(event) => onChange(out.name, { visible: event.currentTarget.checked }, `${key}.visible`)}
                    />
                  </Table.Td>
                  <Table.Td>
                    <TextInput
                      aria-label={`Display name of ${out.name}`}
                      placeholder={out.name}
                      value={setting.displayName}
                      disabled={!setting.visible}
                      error={errors[`${key}.displayName`]}
                      onChange={(event) => onChange(out.name, { displayName: event.currentTarget.value }, `${key}.displayName`)}
                    />
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
