import { Alert, Button, Group, NumberInput, Select, Stack, Text } from "@mantine/core";
import { IconClockPlus } from "@tabler/icons-react";
import { useEffect, useState } from "react";
import { useMutation, useQuery } from "urql";

import { graphql } from "../gql";
import { describeError, errorsByField } from "./errors";
import { Panel } from "./Section";

export const TimeLimitsFields = graphql(`
  fragment TimeLimitsFields on TimeLimits {
    autoStopMinutes
    maxLifetimeMinutes
    runningSince
    stopsAt
    stopReason
    lifetimeEndsAt
    warned
    refusal
  }
`);

const ComputeTimeLimitsDocument = graphql(`
  query ComputeTimeLimits($id: ID!) {
    computeInstance(id: $id) {
      id
      timeLimits {
        ...TimeLimitsFields
      }
      actions {
        name
        allowed
      }
    }
  }
`);

const ServiceTimeLimitsDocument = graphql(`
  query ServiceTimeLimits($id: ID!) {
    serviceInstance(id: $id) {
      id
      timeLimits {
        ...TimeLimitsFields
      }
      actions {
        name
        allowed
      }
    }
  }
`);

const ExtendComputeDocument = graphql(`
  mutation ExtendComputeAutoStop($id: ID!, $minutes: Int!) {
    extendComputeInstanceAutoStop(id: $id, minutes: $minutes) {
      computeInstance {
        id
        timeLimits {
          ...TimeLimitsFields
        }
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

const ExtendServiceDocument = graphql(`
  mutation ExtendServiceAutoStop($id: ID!, $minutes: Int!) {
    extendServiceInstanceAutoStop(id: $id, minutes: $minutes) {
      serviceInstance {
        id
        timeLimits {
          ...TimeLimitsFields
        }
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

const SetComputeLimitsDocument = graphql(`
  mutation SetComputeTimeLimits($id: ID!, $timeLimits: TimeLimitsInput!) {
    setComputeInstanceTimeLimits(id: $id, timeLimits: $timeLimits) {
      computeInstance {
        id
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

const SetServiceLimitsDocument = graphql(`
  mutation SetServiceTimeLimits($id: ID!, $timeLimits: TimeLimitsInput!) {
    setServiceInstanceTimeLimits(id: $id, timeLimits: $timeLimits) {
      serviceInstance {
        id
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export interface LimitsInput {
  autoStopMinutes: number | null;
  maxLifetimeMinutes: number | null;
}

/** The instance's own limits, for those who manage it: the server checks them against the
 * profile's (or the compute instance's) maximum and says why not, next to the field. */
export function LimitsEditor({
  limits,
  onSave,
}: {
  limits: TimeLimitsView;
  onSave: (input: LimitsInput) => Promise<Record<string, string>>;
}) {
  const [open, setOpen] = useState(false);
  const [auto, setAuto] = useState<number | "">(limits.autoStopMinutes ?? "");
  const [lifetime, setLifetime] = useState<number | "">(limits.maxLifetimeMinutes ?? "");
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  if (!open) {
    return (
      <Button
        size="xs"
        variant="subtle"
        onClick={() => {
          setAuto(limits.autoStopMinutes ?? "");
          setLifetime(limits.maxLifetimeMinutes ?? "");
          setErrors({});
          setOpen(true);
        }}
      >
        Change time limits
      </Button>
    );
  }
  return (
    <Stack gap="xs" component="form" aria-label="Time limits" onSubmit={(e) => {
      e.preventDefault();
      setBusy(true);
      void onSave({ autoStopMinutes: auto === "" ? null : auto, maxLifetimeMinutes: lifetime === "" ? null : lifetime }).then((found) => {
        setBusy(false);
        setErrors(found);
        if (Object.keys(found).length === 0) setOpen(false);
      });
    }}>
      <Group grow align="flex-start">
        <NumberInput size="xs" label="Auto-stop after (minutes)" min={15} allowDecimal={false} allowNegative={false} value={auto} error={errors.autoStopMinutes} onChange={(v) => setAuto(typeof v === "number" ? v : "")} />
        <NumberInput size="xs" label="Maximum lifetime (minutes)" min={15} allowDecimal={false} allowNegative={false} value={lifetime} error={errors.maxLifetimeMinutes} onChange={(v) => setLifetime(typeof v === "number" ? v : "")} />
      </Group>
      {errors[""] && (
        <Text size="xs" c="red" role="alert">
          {errors[""]}
        </Text>
      )}
      <Group gap="xs" justify="flex-end">
        <Button size="xs" variant="default" onClick={() => setOpen(false)}>
          Cancel
        </Button>
        <Button size="xs" type="submit" loading={busy}>
          Save
        </Button>
      </Group>
    </Stack>
  );
}

/** 240 -> "4h", 90 -> "1h 30m", 2880 -> "2d". */
export function formatMinutes(minutes: number): string {
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  const mins = minutes % 60;
  return [days ? `${days}d` : "", hours ? `${hours}h` : "", mins ? `${mins}m` : ""].filter(Boolean).join(" ") || "0m";
}

export interface TimeLimitsView {
  autoStopMinutes?: number | null;
  maxLifetimeMinutes?: number | null;
  stopsAt?: string | null;
  stopReason?: string | null;
  lifetimeEndsAt?: string | null;
  warned: boolean;
  refusal?: string | null;
}

const EXTENSIONS = [30, 60, 120, 240, 480].map((m) => ({ value: String(m), label: formatMinutes(m) }));

/** When it stops and why, the limits, and (for those who manage it) an Extend button. */
export function TimeLimitsBody({
  limits,
  canExtend,
  onExtend,
  now = new Date(),
}: {
  limits: TimeLimitsView;
  canExtend: boolean;
  onExtend: (minutes: number) => Promise<string | null>;
  now?: Date;
}) {
  const [minutes, setMinutes] = useState("60");
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const atLifetimeEnd = Boolean(limits.stopsAt && limits.lifetimeEndsAt && limits.stopsAt === limits.lifetimeEndsAt);
  const parts = [
    limits.autoStopMinutes ? `auto-stop after ${formatMinutes(limits.autoStopMinutes)}` : null,
    limits.maxLifetimeMinutes ? `maximum lifetime ${formatMinutes(limits.maxLifetimeMinutes)}` : null,
  ].filter(Boolean);
  let left = "";
  if (limits.stopsAt) {
    const remaining = Math.max(0, Math.round((new Date(limits.stopsAt).getTime() - now.getTime()) / 60000));
    left = remaining > 0 ? ` (in ${formatMinutes(remaining)})` : " (now)";
  }
  return (
    <Stack gap="xs">
      <Text size="sm" c="dimmed" data-testid="time-limits">
        {parts.length ? parts.join(" · ") : "No time limit."}
      </Text>
      {limits.stopsAt ? (
        <Text size="sm" data-testid="stops-at">
          Stops at <b>{new Date(limits.stopsAt).toLocaleString()}</b>
          {left}: {limits.stopReason}
        </Text>
      ) : null}
      {limits.refusal && (
        <Alert color="yellow" role="status">
          {limits.refusal}
        </Alert>
      )}
      {limits.stopsAt && canExtend && (
        <Group gap="xs" align="flex-end">
          <Select aria-label="Extend by" w={110} size="xs" allowDeselect={false} data={EXTENSIONS} value={minutes} onChange={(v) => v && setMinutes(v)} disabled={atLifetimeEnd} />
          <Button
            size="xs"
            leftSection={<IconClockPlus size={14} />}
            loading={busy}
            disabled={atLifetimeEnd}
            title={atLifetimeEnd ? "It stops at the end of its maximum lifetime: that cannot be extended." : undefined}
            onClick={async () => {
              setBusy(true);
              setProblem(await onExtend(Number(minutes)));
              setBusy(false);
            }}
          >
            Extend
          </Button>
        </Group>
      )}
      {atLifetimeEnd && canExtend && (
        <Text size="xs" c="dimmed">
          It stops at the end of its maximum lifetime: that cannot be extended.
        </Text>
      )}
      {problem && (
        <Text size="xs" c="red" role="alert">
          {problem}
        </Text>
      )}
    </Stack>
  );
}

/** The "Auto-stop" panel of a compute or service instance page; read again when `status` changes
 * (a start or deploy arms the limits, a stop ends them). */
export function AutoStopPanel({ kind, id, status }: { kind: "compute" | "service"; id: string; status: string }) {
  const [compute, refetchCompute] = useQuery({ query: ComputeTimeLimitsDocument, variables: { id }, pause: kind !== "compute", requestPolicy: "network-only" });
  const [service, refetchService] = useQuery({ query: ServiceTimeLimitsDocument, variables: { id }, pause: kind !== "service", requestPolicy: "network-only" });
  const [, extendCompute] = useMutation(ExtendComputeDocument);
  const [, extendService] = useMutation(ExtendServiceDocument);
  const [, setCompute] = useMutation(SetComputeLimitsDocument);
  const [, setService] = useMutation(SetServiceLimitsDocument);
  useEffect(() => {
    if (kind === "compute") refetchCompute({ requestPolicy: "network-only" });
    else refetchService({ requestPolicy: "network-only" });
  }, [status, kind, refetchCompute, refetchService]);
  const found = kind === "compute" ? compute.data?.computeInstance : service.data?.serviceInstance;
  if (!found) return null;
  const limits: TimeLimitsView = found.timeLimits;
  // Those who manage it may change it (a compute instance) or delete it (a service instance).
  const canExtend = found.actions.some((a) => a.name === (kind === "compute" ? "UPDATE" : "DELETE") && a.allowed);

  async function onExtend(minutes: number): Promise<string | null> {
    if (kind === "compute") {
      const result = await extendCompute({ id, minutes });
      refetchCompute({ requestPolicy: "network-only" });
      return result.error ? describeError(result.error) : (result.data?.extendComputeInstanceAutoStop.userErrors[0]?.message ?? null);
    }
    const result = await extendService({ id, minutes });
    refetchService({ requestPolicy: "network-only" });
    return result.error ? describeError(result.error) : (result.data?.extendServiceInstanceAutoStop.userErrors[0]?.message ?? null);
  }

  async function onSave(timeLimits: LimitsInput): Promise<Record<string, string>> {
    let failure: string | null;
    let problems: readonly { field?: readonly string[] | null; message: string; code: string }[];
    if (kind === "compute") {
      const result = await setCompute({ id, timeLimits });
      failure = result.error ? describeError(result.error) : null;
      problems = result.data?.setComputeInstanceTimeLimits.userErrors ?? [];
      refetchCompute({ requestPolicy: "network-only" });
    } else {
      const result = await setService({ id, timeLimits });
      failure = result.error ? describeError(result.error) : null;
      problems = result.data?.setServiceInstanceTimeLimits.userErrors ?? [];
      refetchService({ requestPolicy: "network-only" });
    }
    return failure ? { "": failure } : errorsByField(problems);
  }

  return (
    <Panel title="Auto-stop">
      <TimeLimitsBody limits={limits} canExtend={canExtend} onExtend={onExtend} />
      {canExtend && <LimitsEditor limits={limits} onSave={onSave} />}
    </Panel>
  );
}
