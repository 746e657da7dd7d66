import { ActionIcon, Alert, Button, Card, Group, NumberInput, Select, SimpleGrid, Stack, Text, TextInput, Title } from "@mantine/core";
import { IconPlus, IconTrash } from "@tabler/icons-react";
import { useState } from "react";
import { useMutation, useQuery } from "urql";

import { useAuth } from "../../app/auth";
import { useProject } from "../../app/project";
import { describeError, errorsByField } from "../../components/errors";
import { FormErrors } from "../../components/FormErrors";
import type { ProjectQuotaQuery, Vendor } from "../../gql/graphql";
import { ClearQuotaDocument, ProjectQuotaDocument, SetQuotaDocument } from "./queries";
import { UsageBars } from "./UsageBars";

type Limits = NonNullable<NonNullable<ProjectQuotaQuery["projectQuota"]>["quota"]>;

const VENDORS: Vendor[] = ["NVIDIA", "AMD", "INTEL", "ASCEND"] as Vendor[];
const PROJECT = "";

interface GpuRow {
  vendor: Vendor;
  model: string;
  count: number | string;
}

interface FormState {
  gpus: number | string;
  cpu: string;
  memory: string;
  instances: number | string;
  gpuLimits: GpuRow[];
}

function formOf(quota: Limits | null | undefined): FormState {
  return {
    gpus: quota?.gpus ?? "",
    cpu: quota?.cpu ?? "",
    memory: quota?.memory ?? "",
    instances: quota?.instances ?? "",
    gpuLimits: (quota?.gpuLimits ?? []).map((g) => ({ vendor: g.vendor, model: g.model ?? "", count: g.count })),
  };
}

function count(value: number | string): number | null {
  return value === "" || value === null ? null : Number(value);
}

/** The quota form: platform admins set the project's, the project's admins each member's. */
function QuotaForm({ data, onSaved }: { data: NonNullable<ProjectQuotaQuery["projectQuota"]>; onSaved: () => void }) {
  const { project } = useProject();
  const { me } = useAuth();
  const platform = Boolean(me?.isPlatformAdmin);
  const targets = [
    ...(platform ? [{ value: PROJECT, label: `Project "${project}"` }] : []),
    ...data.members.map((m) => ({ value: m.username, label: `Member ${m.username}` })),
  ];
  const [target, setTarget] = useState<string>(targets[0]?.value ?? PROJECT);
  const quotaOf = (who: string) => (who === PROJECT ? data.quota : data.members.find((m) => m.username === who)?.quota);
  const [form, setForm] = useState<FormState>(() => formOf(quotaOf(target)));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [saved, setSaved] = useState<string | null>(null);
  const [{ fetching: saving }, save] = useMutation(SetQuotaDocument);
  const [{ fetching: clearing }, clear] = useMutation(ClearQuotaDocument);

  const choose = (who: string | null) => {
    const chosen = who ?? PROJECT;
    setTarget(chosen);
    setForm(formOf(quotaOf(chosen)));
    setErrors({});
    setSaved(null);
  };
  const done = (userErrors: readonly { field?: readonly string[] | null; message: string; code: string }[] | undefined, error: unknown, what: string) => {
    if (error) {
      setErrors({ "": describeError(error as { message: string }) ?? "Not saved." });
      return;
    }
    if (userErrors && userErrors.length > 0) {
      setErrors(errorsByField(userErrors));
      return;
    }
    setErrors({});
    setSaved(what);
    onSaved();
  };
  const submit = async () => {
    const result = await save({
      input: {
        project,
        username: target === PROJECT ? null : target,
        gpus: count(form.gpus),
        cpu: form.cpu.trim() || null,
        memory: form.memory.trim() || null,
        instances: count(form.instances),
        gpuLimits: form.gpuLimits.map((g) => ({ vendor: g.vendor, model: g.model.trim() || null, count: Number(g.count || 0) })),
      },
    });
    done(result.data?.setQuota.userErrors, result.error, "The quota was saved.");
  };
  const remove = async () => {
    const result = await clear({ project, username: target === PROJECT ? null : target });
    if (!result.error) setForm(formOf(null));
    done(result.data?.clearQuota.userErrors, result.error, "The quota was removed.");
  };
  const setRow = (index: number, row: Partial<GpuRow>) =>
    setForm((f) => ({ ...f, gpuLimits: f.gpuLimits.map((g, i) => (i === index ? { ...g, ...row } : g)) }));

  return (
    <Stack gap="sm" component="form" aria-label="Set a quota" onSubmit={(event) => { event.preventDefault(); void submit(); }}>
      <Select label="Quota of" data={targets} value={target} onChange={choose} allowDeselect={false} />
      <Text size="xs" c="dimmed">
        Leave a field empty for no limit. A member's limits may not exceed the project's.
      </Text>
      <SimpleGrid cols={{ base: 1, sm: 2 }} spacing="sm">
        <NumberInput label="GPUs (all vendors)" min={0} allowDecimal={false} value={form.gpus} onChange={(v) => setForm({ ...form, gpus: v })} error={errors.gpus} />
        <NumberInput label="Deployed instances" min={0} allowDecimal={false} value={form.instances} onChange={(v) => setForm({ ...form, instances: v })} error={errors.instances} />
        <TextInput label="CPU" placeholder="32" value={form.cpu} onChange={(e) => setForm({ ...form, cpu: e.currentTarget.value })} error={errors.cpu} />
        <TextInput label="Memory" placeholder="256Gi" value={form.memory} onChange={(e) => setForm({ ...form, memory: e.currentTarget.value })} error={errors.memory} />
      </SimpleGrid>
      <Stack gap={4}>
        <Text size="sm" fw={500}>
          GPUs per vendor or model
        </Text>
        {form.gpuLimits.map((row, index) => (
          <Group key={index} gap="xs" align="flex-start" wrap="nowrap">
            <Select aria-label={`Vendor ${index + 1}`} data={VENDORS} value={row.vendor} onChange={(v) => setRow(index, { vendor: (v ?? "NVIDIA") as Vendor })} allowDeselect={false} w={120} error={errors[`gpuLimits.${index}.vendor`]} />
            <TextInput aria-label={`Model ${index + 1}`} placeholder="every model" value={row.model} onChange={(e) => setRow(index, { model: e.currentTarget.value })} style={{ flex: 1 }} error={errors[`gpuLimits.${index}.model`]} />
            <NumberInput aria-label={`GPU count ${index + 1}`} min={0} allowDecimal={false} value={row.count} onChange={(v) => setRow(index, { count: v })} w={100} error={errors[`gpuLimits.${index}.count`]} />
            <ActionIcon variant="subtle" color="red" aria-label={`Remove GPU limit ${index + 1}`} onClick={() => setForm({ ...form, gpuLimits: form.gpuLimits.filter((_, i) => i !== index) })} mt={4}>
              <IconTrash size={16} />
            </ActionIcon>
          </Group>
        ))}
        <Group>
          <Button variant="subtle" size="xs" leftSection={<IconPlus size={14} />} onClick={() => setForm({ ...form, gpuLimits: [...form.gpuLimits, { vendor: "NVIDIA" as Vendor, model: "", count: 1 }] })}>
            Add a GPU limit
          </Button>
        </Group>
      </Stack>
      <FormErrors title="The quota was not saved" errors={errors} placed={["gpus", "instances", "cpu", "memory", "gpuLimits"]} />
      {saved && (
        <Alert color="green" role="status">
          {saved}
        </Alert>
      )}
      <Group>
        <Button type="submit" loading={saving}>
          Save quota
        </Button>
        <Button variant="default" onClick={() => void remove()} loading={clearing}>
          Remove quota
        </Button>
      </Group>
    </Stack>
  );
}

/** The project's usage against its quota (and the members' the caller may see), as used / limit bars. */
export function QuotaCard() {
  const { project, isAdmin } = useProject();
  const [{ data, error }, refetch] = useQuery({ query: ProjectQuotaDocument, variables: { project }, requestPolicy: "cache-and-network" });
  const [editing, setEditing] = useState(false);
  const quota = data?.projectQuota;
  return (
    <Card withBorder padding="lg" component="section" aria-label="Quota">
      <Group justify="space-between" mb="sm">
        <Title order={4}>Quota</Title>
        {isAdmin && quota && (
          <Button variant="light" size="xs" onClick={() => setEditing((e) => !e)}>
            {editing ? "Close" : "Set quotas"}
          </Button>
        )}
      </Group>
      {error && !data && <Text c="red">{describeError(error)}</Text>}
      {quota && (
        <Stack gap="md">
          {!quota.quota && (
            <Text size="sm" c="dimmed">
              This project has no quota: what it uses is shown below.
            </Text>
          )}
          <UsageBars lines={quota.usage} testId="quota-project" />
          {quota.members
            .filter((m) => m.quota)
            .map((m) => (
              <Stack key={m.username} gap={4}>
                <Text size="sm" fw={500}>
                  {m.username}
                </Text>
                <UsageBars lines={m.usage.filter((u) => u.limit !== null && u.limit !== undefined)} testId={`quota-member-${m.username}`} />
              </Stack>
            ))}
          {editing && <QuotaForm data={quota} onSaved={() => refetch({ requestPolicy: "network-only" })} />}
        </Stack>
      )}
    </Card>
  );
}
