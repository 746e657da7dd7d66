import { Alert, Button, Chip, Group, Paper, SegmentedControl, Stack, Table, Text, TextInput, Title } from "@mantine/core";
import { IconPlus } from "@tabler/icons-react";
import { useState } from "react";
import { useMutation, useQuery } from "urql";

import { useProject } from "../../app/project";
import { ConfirmButton } from "../../components/ConfirmButton";
import { FormErrors } from "../../components/FormErrors";
import { describeError, errorsByField } from "../../components/errors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import type { ScheduleAction, ScheduleTarget } from "../../gql/graphql";
import { CreateScheduleDocument, DeleteScheduleDocument, SchedulesDocument } from "./queries";

export const DAYS = ["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"] as const;
const WEEKDAYS = DAYS.slice(0, 5);

/** The browser's own time zone, as the default of a new schedule. */
function localZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  } catch {
    return "UTC";
  }
}

export function describeSchedule(s: { action: ScheduleAction; appliesTo: ScheduleTarget; days: readonly string[]; timeOfDay: string; timeZone: string }): string {
  const what = s.appliesTo === "SERVICE_INSTANCES" ? "every running service instance" : "every deployed compute instance";
  const days = s.days.length === 7 ? "every day" : s.days.join(" ") === WEEKDAYS.join(" ") ? "on weekdays" : `on ${s.days.join(", ")}`;
  const verb = s.action === "STOP" ? "Stop" : "Destroy";
  return `${verb} ${what} at ${s.timeOfDay} ${s.timeZone} ${days}`;
}

function CreateScheduleForm({ project, onCreated }: { project: string; onCreated: () => void }) {
  const [name, setName] = useState("evening");
  const [target, setTarget] = useState<ScheduleTarget>("SERVICE_INSTANCES");
  const [days, setDays] = useState<string[]>([...WEEKDAYS]);
  const [timeOfDay, setTimeOfDay] = useState("20:00");
  const [timeZone, setTimeZone] = useState(localZone);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [{ fetching }, create] = useMutation(CreateScheduleDocument);
  // Service instances are stopped (workspaces kept); compute instances destroyed (settings kept).
  const action: ScheduleAction = target === "SERVICE_INSTANCES" ? "STOP" : "DESTROY";

  async function submit() {
    const result = await create({ input: { project, name, action, appliesTo: target, days, timeOfDay, timeZone } });
    const problems = result.data?.createSchedule.userErrors ?? [];
    if (result.error) setErrors({ "": describeError(result.error) ?? "Could not save the schedule." });
    else if (problems.length) setErrors(errorsByField(problems));
    else {
      setErrors({});
      onCreated();
    }
  }

  return (
    <Paper withBorder p="md" component="form" aria-label="New schedule" onSubmit={(e) => { e.preventDefault(); void submit(); }}>
      <Stack>
        <Title order={4}>New schedule</Title>
        <Group align="flex-start" grow>
          <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} error={errors.name} required />
          <TextInput label="Time of day" description="24-hour, HH:MM" value={timeOfDay} onChange={(e) => setTimeOfDay(e.currentTarget.value)} error={errors.timeOfDay} required />
          <TextInput label="Time zone" description="IANA name, e.g. Europe/Berlin" value={timeZone} onChange={(e) => setTimeZone(e.currentTarget.value)} error={errors.timeZone} required />
        </Group>
        <Stack gap={4}>
          <Text size="sm" fw={500}>What it does</Text>
          <SegmentedControl
            aria-label="What it does"
            value={target}
            onChange={(value) => setTarget(value as ScheduleTarget)}
            data={[
              { value: "SERVICE_INSTANCES", label: "Stop service instances" },
              { value: "COMPUTE_INSTANCES", label: "Destroy compute instances" },
            ]}
          />
          {errors.action && <Text size="xs" c="red">{errors.action}</Text>}
        </Stack>
        <Stack gap={4}>
          <Text size="sm" fw={500}>Days</Text>
          <Chip.Group multiple value={days} onChange={setDays}>
            <Group gap={6}>
              {DAYS.map((day) => (
                <Chip key={day} value={day} size="sm">
                  {day}
                </Chip>
              ))}
            </Group>
          </Chip.Group>
          {errors.days && <Text size="xs" c="red">{errors.days}</Text>}
        </Stack>
        <FormErrors title="The schedule was not saved" errors={errors} placed={["name", "timeOfDay", "timeZone", "action", "days"]} />
        <Group justify="flex-end">
          <Button type="submit" loading={fetching} leftSection={<IconPlus size={16} />}>
            Add Schedule
          </Button>
        </Group>
      </Stack>
    </Paper>
  );
}

export function SchedulesPage() {
  const { project, isAdmin } = useProject();
  const [{ data, error }, refetch] = useQuery({ query: SchedulesDocument, variables: { project }, requestPolicy: "cache-and-network" });
  const [, remove] = useMutation(DeleteScheduleDocument);
  const [problem, setProblem] = useState<string | null>(null);
  const reload = () => refetch({ requestPolicy: "network-only" });

  async function onDelete(id: string) {
    const result = await remove({ id });
    const message = result.error ? describeError(result.error) : result.data?.deleteSchedule.userErrors[0]?.message;
    setProblem(message ?? null);
    reload();
  }

  return (
    <Stack>
      <Stack gap={2}>
        <Title order={2}>Schedules</Title>
        <Text c="dimmed" size="sm">
          Stop what runs at set times, in your own time zone (daylight saving time included). Instances also stop by themselves after their time limits.
        </Text>
      </Stack>
      {problem && <Alert color="red" role="alert">{problem}</Alert>}
      {isAdmin && <CreateScheduleForm project={project} onCreated={reload} />}
      {error && !data ? (
        <ErrorState message={describeError(error) ?? "Could not load the schedules."} onRetry={reload} />
      ) : !data ? (
        <Loading label="Loading schedules" />
      ) : data.schedules.length === 0 ? (
        <EmptyState title="No schedules">
          {isAdmin ? "Add one above: for example, stop every service instance at 20:00 on weekdays." : "Project admins add schedules."}
        </EmptyState>
      ) : (
        <Table.ScrollContainer minWidth={800}>
          <Table verticalSpacing="sm">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>What</Table.Th>
                <Table.Th>Next run</Table.Th>
                <Table.Th>Last run</Table.Th>
                {isAdmin && <Table.Th />}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {data.schedules.map((s) => (
                <Table.Tr key={s.id} data-testid={`schedule-${s.name}`}>
                  <Table.Td fw={500}>{s.name}</Table.Td>
                  <Table.Td>{describeSchedule(s)}</Table.Td>
                  <Table.Td>{new Date(s.nextRunAt).toLocaleString()}</Table.Td>
                  <Table.Td>
                    {s.lastRunAt ? (
                      <Stack gap={0}>
                        <Text size="sm">{new Date(s.lastRunAt).toLocaleString()}</Text>
                        <Text size="xs" c="dimmed">{s.lastResult}</Text>
                      </Stack>
                    ) : (
                      <Text size="sm" c="dimmed">never</Text>
                    )}
                  </Table.Td>
                  {isAdmin && (
                    <Table.Td>
                      <ConfirmButton
                        size="xs"
                        color="red"
                        variant="light"
                        label="Delete"
                        aria-label={`Delete schedule ${s.name}`}
                        title={`Delete schedule "${s.name}"?`}
                        message="It will no longer stop anything. Running instances are not touched."
                        confirmLabel="Delete"
                        onConfirm={() => onDelete(s.id)}
                      />
                    </Table.Td>
                  )}
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Stack>
  );
}
