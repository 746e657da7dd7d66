/* The sections of the "Launch service" form: where it runs, its template, the service itself and
 * the advanced overrides. Each shows part of the form's state and sends changes to its reducer. */
import { Alert, Badge, Button, Checkbox, Collapse, Group, NumberInput, Paper, Radio, Select, SimpleGrid, Stack, Text, TextInput } from "@mantine/core";
import { IconChevronDown, IconChevronRight, IconInfoCircle, IconRestore } from "@tabler/icons-react";
import type { Dispatch } from "react";

import { statusLabel } from "../../components/StatusBadge";
import { Section } from "../../components/Section";
import { CommandEditor, EnvEditor, PortsEditor, VendorBadge } from "../instance-templates/spec";
import { ResourcesEditor, StorageEditor } from "../instance-templates/storage";
import { gpuUse, notYours, overrides, templateSpec, vendorMismatch, whyNotSelectable, type Instance, type LaunchAction, type LaunchState, type Template } from "./launchModel";

interface SectionProps {
  state: LaunchState;
  dispatch: Dispatch<LaunchAction>;
}

function instanceLabel(instance: Instance): string {
  return instance.displayName || instance.name;
}

/** The compute instance the service runs in (only deployed ones can be chosen), and its GPUs. */
export function WhereSection({ state, dispatch, instances }: SectionProps & { instances: readonly Instance[] }) {
  const instance = instances.find((i) => i.id === state.computeInstance);
  const why = instance ? (notYours(instance) ?? whyNotSelectable(instance)) : null;
  const notSelectable = instances.filter((i) => notYours(i) !== null || whyNotSelectable(i) !== null);
  const use = instance ? gpuUse(instance) : null;
  return (
    <Section title="Where">
      <Select
        label="Compute instance"
        placeholder="Choose a deployed compute instance"
        required
        searchable
        allowDeselect={false}
        maw={480}
        value={state.computeInstance}
        onChange={(id) => dispatch({ type: "chooseInstance", id })}
        error={state.errors.computeInstance ?? (instance && why ? `"${instanceLabel(instance)}" cannot run services: ${why}.` : undefined)}
        description={
          notSelectable.length
            ? `Services run in a deployed (Success) compute instance of yours (a project admin's: any): ${notSelectable.length} of this project's ${instances.length} ${
                notSelectable.length === 1 ? "is" : "are"
              } not selectable.`
            : "Services run inside a deployed compute instance of this project."
        }
        data={instances.map((i) => {
          const owned = notYours(i);
          const reason = whyNotSelectable(i);
          return {
            value: i.id,
            label: owned
              ? `${instanceLabel(i)} (${owned})`
              : reason
                ? `${instanceLabel(i)} (${statusLabel(i.status)}: ${reason})`
                : instanceLabel(i),
            disabled: owned !== null || reason !== null,
          };
        })}
      />
      {instance && use && (
        <Text size="sm" c="dimmed" data-testid="instance-gpus">
          {use.total === 0 || instance.resources.gpuVendor === "CPU"
            ? "This compute instance has no GPUs: services run on its CPUs."
            : `This compute instance has ${use.total} × ${instance.resources.gpuVendor}${
                instance.resources.gpuModel ? ` ${instance.resources.gpuModel}` : ""
              } GPU${use.total === 1 ? "" : "s"}; ${use.used} held by its other service instances, ${use.free} free.`}
        </Text>
      )}
    </Section>
  );
}

/** The instance template the service starts from, as cards. */
export function TemplateSection({ state, dispatch, templates }: SectionProps & { templates: readonly Template[] }) {
  return (
    <Section title="Template">
      <Radio.Group
        value={state.templateId}
        onChange={(id) => {
          const template = templates.find((t) => t.id === id);
          if (template) dispatch({ type: "chooseTemplate", template });
        }}
        label="Instance template"
        description="The image, command, ports and environment the service starts with."
        required
        error={state.errors.template}
      >
        {templates.length === 0 ? (
          <Text size="sm" c="dimmed" mt="xs">
            No instance template is available: ask a project admin to add one in the studio.
          </Text>
        ) : (
          <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }} mt="xs">
            {templates.map((t) => (
              <Radio.Card key={t.id} value={t.id} radius="md" p="sm" aria-label={`${t.displayName} (${t.vendor})`}>
                <Group wrap="nowrap" align="flex-start" gap="sm">
                  <Radio.Indicator mt={2} />
                  <Stack gap={4} style={{ minWidth: 0, flex: 1 }}>
                    <Group justify="space-between" wrap="nowrap" gap="xs">
                      <Text fw={600} size="sm" lineClamp={2}>
                        {t.displayName}
                      </Text>
                      <VendorBadge vendor={t.vendor} />
                    </Group>
                    <Text size="xs" c="dimmed" ff="monospace" lineClamp={1}>
                      {t.image}
                    </Text>
                    {t.description && (
                      <Text size="xs" c="dimmed" lineClamp={2}>
                        {t.description}
                      </Text>
                    )}
                    {!t.project && (
                      <Badge size="xs" variant="outline" color="teal">
                        Global
                      </Badge>
                    )}
                  </Stack>
                </Group>
              </Radio.Card>
            ))}
          </SimpleGrid>
        )}
      </Radio.Group>
    </Section>
  );
}

/** Name, GPU count and whether it starts now, with what the compute instance has free. */
export function ServiceSection({ state, dispatch, instance, template }: SectionProps & { instance?: Instance; template?: Template }) {
  const use = instance ? gpuUse(instance) : null;
  const mismatch = vendorMismatch(state, template, instance);
  const { errors, gpuCount } = state;
  return (
    <Section title="Service">
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <TextInput
          label="Name"
          description="Unique in the compute instance; lowercase letters, digits and “-”."
          required
          value={state.name}
          onChange={(event) => dispatch({ type: "setName", name: event.currentTarget.value })}
          error={errors.name}
        />
        <TextInput
          label="Display name"
          description="Defaults to the name."
          value={state.displayName}
          onChange={(event) => dispatch({ type: "setDisplayName", displayName: event.currentTarget.value })}
          error={errors.displayName}
        />
      </SimpleGrid>
      <NumberInput
        label="GPU count"
        description={
          use
            ? `The compute instance has ${use.total} GPU${use.total === 1 ? "" : "s"} (${use.free} free). ${
                template?.vendor === "CPU" ? "A CPU template runs without GPUs." : "0 runs the service without GPUs."
              }`
            : "1 for a GPU template, 0 for a CPU one."
        }
        min={0}
        max={64}
        allowDecimal={false}
        allowNegative={false}
        maw={320}
        value={gpuCount}
        onChange={(value) => dispatch({ type: "setGpuCount", gpuCount: typeof value === "number" ? value : value === "" ? "" : Number(value) })}
        error={errors.gpuCount}
      />
      {!errors.gpuCount && state.start && use && typeof gpuCount === "number" && gpuCount > use.free && gpuCount <= use.total && (
        <Alert color="yellow" icon={<IconInfoCircle size={18} />}>
          Only {use.free} of the compute instance&apos;s GPUs {use.free === 1 ? "is" : "are"} free: stop another service instance
          first, lower the GPU count, or clear &quot;Start now&quot; to create it stopped.
        </Alert>
      )}
      {mismatch && (
        <Alert color="yellow" icon={<IconInfoCircle size={18} />}>
          {mismatch}
        </Alert>
      )}
      <Checkbox
        label="Start now"
        description="Otherwise it is created stopped: start it later from its page."
        checked={state.start}
        onChange={(event) => dispatch({ type: "setStart", start: event.currentTarget.checked })}
        error={errors.start}
      />
    </Section>
  );
}

/** The command, environment and ports, prefilled from the template; only changes are sent. */
export function AdvancedSection({
  state,
  dispatch,
  template,
  claims,
}: SectionProps & { template?: Template; claims?: readonly { name: string; size?: string | null; serviceId?: string | null }[] }) {
  const changed = overrides(state, template);
  const setSpec = (spec: Partial<Pick<LaunchState, "command" | "env" | "ports" | "storage" | "resources">>) => dispatch({ type: "setSpec", spec });
  return (
    <Paper withBorder p="md" radius="md">
      <Group justify="space-between">
        <Button
          variant="subtle"
          px={0}
          onClick={() => dispatch({ type: "toggleAdvanced" })}
          leftSection={state.advanced ? <IconChevronDown size={16} /> : <IconChevronRight size={16} />}
          aria-expanded={state.advanced}
          aria-controls="launch-advanced"
        >
          Advanced: command, environment, ports, storage, CPU and memory
        </Button>
        {changed.any && (
          <Badge color="orange" variant="light">
            Overrides the template
          </Badge>
        )}
      </Group>
      <Collapse expanded={state.advanced} id="launch-advanced">
        <Stack mt="sm" gap="lg">
          {!template ? (
            <Text size="sm" c="dimmed">
              Choose a template first: these settings start as the template&apos;s.
            </Text>
          ) : (
            <>
              <Group justify="space-between">
                <Text size="sm" c="dimmed">
                  Prefilled from &quot;{template.displayName}&quot;. Only what you change is sent; the rest stays the template&apos;s.
                </Text>
                <Button
                  size="xs"
                  variant="default"
                  leftSection={<IconRestore size={14} />}
                  disabled={!changed.any}
                  onClick={() => setSpec(templateSpec(template))}
                >
                  Reset to the template&apos;s
                </Button>
              </Group>
              <CommandEditor value={state.command} onChange={(command) => setSpec({ command })} errors={state.errors} />
              <EnvEditor value={state.env} onChange={(env) => setSpec({ env })} errors={state.errors} />
              <PortsEditor value={state.ports} onChange={(ports) => setSpec({ ports })} errors={state.errors} />
              <StorageEditor value={state.storage} onChange={(storage) => setSpec({ storage })} errors={state.errors} claims={claims} />
              <ResourcesEditor value={state.resources} onChange={(resources) => setSpec({ resources })} errors={state.errors} />
            </>
          )}
        </Stack>
      </Collapse>
    </Paper>
  );
}
