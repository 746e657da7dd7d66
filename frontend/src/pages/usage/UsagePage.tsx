import { Alert, Button, Card, Group, SegmentedControl, Select, Stack, Table, Text, TextInput, Title } from "@mantine/core";
import { IconDownload, IconInfoCircle } from "@tabler/icons-react";
import { useState } from "react";
import { useQuery } from "urql";

import { useAuth } from "../../app/auth";
import { useProject } from "../../app/project";
import { describeError } from "../../components/errors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import { graphql } from "../../gql";
import type { UsageGrouping } from "../../gql/graphql";
import { GpuPrices } from "./GpuPrices";
import { UsageChart } from "./UsageChart";

export const UsageReportDocument = graphql(`
  query UsageReport($from: Date!, $to: Date!, $groupBy: UsageGrouping!, $project: String) {
    usage(from: $from, to: $to, groupBy: $groupBy, project: $project) {
      from
      to
      until
      csv
      days {
        day
        group
        gpuHours
      }
      groups {
        group
        gpuHours
        cpuCoreHours
        memoryGibHours
        cost
      }
      total {
        gpuHours
        cpuCoreHours
        memoryGibHours
        cost
      }
    }
  }
`);

const GROUPINGS: { value: UsageGrouping; label: string }[] = [
  { value: "PROJECT", label: "Project" },
  { value: "USER", label: "User" },
  { value: "INSTANCE", label: "Instance" },
  { value: "GPU_MODEL", label: "GPU model" },
];
const MAX_DAYS = 366;

/** Today's UTC date, and the day `days` before it, as ISO dates. */
export function lastDays(days: number, now: Date = new Date()): { from: string; to: string } {
  const to = now.toISOString().slice(0, 10);
  const from = new Date(Date.parse(`${to}T00:00:00Z`) - (days - 1) * 86_400_000).toISOString().slice(0, 10);
  return { from, to };
}

/** What is wrong with a period before asking the server, or null. */
export function periodProblem(from: string, to: string): string | null {
  const start = Date.parse(`${from}T00:00:00Z`);
  const end = Date.parse(`${to}T00:00:00Z`);
  if (Number.isNaN(start)) return "Pick a start day.";
  if (Number.isNaN(end)) return "Pick an end day.";
  if (end < start) return "The end is before the start: pick an end on or after it.";
  const days = Math.round((end - start) / 86_400_000) + 1;
  if (days > MAX_DAYS) return `That is ${days} days: pick at most ${MAX_DAYS} days at a time.`;
  return null;
}

/** Hours with 2 decimals; small amounts (a few minutes) with up to 4, so that they do not read 0. */
export function hours(value: number): string {
  const digits = value > 0 && value < 1 ? 4 : 2;
  return value.toLocaleString("en", { maximumFractionDigits: digits, minimumFractionDigits: 2 });
}

function money(value: number | null | undefined): string {
  return value === null || value === undefined ? "—" : value.toLocaleString("en", { maximumFractionDigits: 2, minimumFractionDigits: 2 });
}

/** Downloads `text` as a file (the report's CSV). */
function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.appendChild(link);
  link.click();
  link.remove();
  URL.revokeObjectURL(url);
}

/** GPU-hours per UTC day as a stacked chart and a table per group, with the CSV to download. */
export function UsagePage() {
  const { project, isAdmin } = useProject();
  const { me } = useAuth();
  const initial = lastDays(30);
  const [from, setFrom] = useState(initial.from);
  const [to, setTo] = useState(initial.to);
  const [groupBy, setGroupBy] = useState<UsageGrouping>(isAdmin ? "USER" : "INSTANCE");
  const [scope, setScope] = useState<"project" | "all">("project");
  const problem = periodProblem(from, to);
  const [{ data, error, fetching }, refetch] = useQuery({
    query: UsageReportDocument,
    variables: { from, to, groupBy, project: scope === "project" ? project : null },
    pause: problem !== null,
    requestPolicy: "cache-and-network",
  });
  const report = data?.usage;
  const groups = report ? report.groups.map((g) => g.group) : [];
  const anyCost = report ? report.groups.some((g) => g.cost !== null) : false;
  const whose = me?.isPlatformAdmin
    ? "Platform admins see every project's usage."
    : isAdmin
      ? "As a project admin you see all of this project's usage; elsewhere, your own."
      : "You see your own usage: what your instances held.";

  return (
    <Stack gap="md">
      <Group justify="space-between" align="flex-end">
        <div>
          <Title order={2}>Usage</Title>
          <Text size="sm" c="dimmed">
            GPU-hours, CPU core-hours and memory GiB-hours of compute instances while deployed, per UTC day. {whose}
          </Text>
        </div>
        <Button
          leftSection={<IconDownload size={16} />}
          variant="light"
          disabled={!report}
          onClick={() => report && download(`usage-${report.from}-${report.to}.csv`, report.csv)}
        >
          Download CSV
        </Button>
      </Group>
      <Card withBorder>
        <Group align="flex-end" wrap="wrap">
          <TextInput type="date" label="From (UTC)" value={from} onChange={(e) => setFrom(e.currentTarget.value)} />
          <TextInput type="date" label="To (UTC)" value={to} onChange={(e) => setTo(e.currentTarget.value)} />
          <Select
            label="Group by"
            allowDeselect={false}
            data={GROUPINGS}
            value={groupBy}
            onChange={(value) => value && setGroupBy(value as UsageGrouping)}
            w={160}
          />
          <Stack gap={4}>
            <Text size="sm" fw={500}>
              Projects
            </Text>
            <SegmentedControl
              aria-label="Projects"
              value={scope}
              onChange={(value) => setScope(value as "project" | "all")}
              data={[
                { value: "project", label: `This project (${project})` },
                { value: "all", label: "All I may see" },
              ]}
            />
          </Stack>
        </Group>
        {problem && (
          <Alert mt="sm" color="orange" icon={<IconInfoCircle size={16} />} role="alert">
            {problem}
          </Alert>
        )}
      </Card>
      {problem ? null : error && !report ? (
        <ErrorState message={describeError(error) ?? "The usage could not be loaded."} onRetry={() => refetch({ requestPolicy: "network-only" })} />
      ) : !report ? (
        <Loading label={fetching ? "Loading the usage" : "Loading"} />
      ) : report.groups.length === 0 ? (
        <EmptyState title="No usage in this period">Compute instances are metered from the moment a deploy succeeds until they are destroyed.</EmptyState>
      ) : (
        <>
          <Card withBorder>
            <Title order={4} mb="sm">
              GPU-hours per day
            </Title>
            <UsageChart from={report.from} to={report.to} values={report.days} groups={groups} />
          </Card>
          <Card withBorder>
            <Table striped aria-label="Usage per group">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>{GROUPINGS.find((g) => g.value === groupBy)?.label}</Table.Th>
                  <Table.Th ta="right">GPU-hours</Table.Th>
                  <Table.Th ta="right">CPU core-hours</Table.Th>
                  <Table.Th ta="right">Memory GiB-hours</Table.Th>
                  {anyCost && <Table.Th ta="right">Cost</Table.Th>}
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {report.groups.map((g) => (
                  <Table.Tr key={g.group}>
                    <Table.Td>{g.group}</Table.Td>
                    <Table.Td ta="right">{hours(g.gpuHours)}</Table.Td>
                    <Table.Td ta="right">{hours(g.cpuCoreHours)}</Table.Td>
                    <Table.Td ta="right">{hours(g.memoryGibHours)}</Table.Td>
                    {anyCost && <Table.Td ta="right">{money(g.cost)}</Table.Td>}
                  </Table.Tr>
                ))}
              </Table.Tbody>
              <Table.Tfoot>
                <Table.Tr>
                  <Table.Th>Total</Table.Th>
                  <Table.Th ta="right">{hours(report.total.gpuHours)}</Table.Th>
                  <Table.Th ta="right">{hours(report.total.cpuCoreHours)}</Table.Th>
                  <Table.Th ta="right">{hours(report.total.memoryGibHours)}</Table.Th>
                  {anyCost && <Table.Th ta="right">{money(report.total.cost)}</Table.Th>}
                </Table.Tr>
              </Table.Tfoot>
            </Table>
            {anyCost && (
              <Text size="xs" c="dimmed" mt="xs">
                Cost is GPU-hours times the price per GPU-hour a platform admin set for each GPU model; — means GPUs without a price were used.
              </Text>
            )}
            <Text size="xs" c="dimmed" mt="xs">
              Instances still deployed are counted up to {new Date(report.until).toISOString().slice(0, 16).replace("T", " ")} UTC.
            </Text>
          </Card>
        </>
      )}
      {me?.isPlatformAdmin && <GpuPrices onChange={() => refetch({ requestPolicy: "network-only" })} />}
    </Stack>
  );
}
