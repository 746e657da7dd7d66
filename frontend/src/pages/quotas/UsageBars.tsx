import { Group, Progress, Stack, Text } from "@mantine/core";

export interface UsageLine {
  key: string;
  label: string;
  used: number;
  limit?: number | null;
  usedShown: string;
  limitShown?: string | null;
}

/** How full a dimension is, in percent (a limit of 0 with nothing used is empty, with anything used full). */
export function percentUsed(used: number, limit: number): number {
  if (limit <= 0) return used > 0 ? 100 : 0;
  return Math.min(100, (used / limit) * 100);
}

function color(percent: number): string {
  if (percent >= 100) return "red";
  if (percent >= 80) return "orange";
  return "blue";
}

/** Used / limit bars: one per limited dimension; the others as "used, no limit". */
export function UsageBars({ lines, testId }: { lines: readonly UsageLine[]; testId: string }) {
  return (
    <Stack gap="xs" data-testid={testId}>
      {lines.map((line) => {
        const limited = line.limit !== null && line.limit !== undefined;
        const percent = limited ? percentUsed(line.used, line.limit as number) : 0;
        const text = limited ? `${line.usedShown} / ${line.limitShown}` : `${line.usedShown} (no limit)`;
        return (
          <Stack key={line.key} gap={2} data-testid={`${testId}-${line.key}`}>
            <Group justify="space-between" gap="xs">
              <Text size="sm">{line.label}</Text>
              <Text size="sm" c={limited && percent >= 100 ? "red" : undefined} fw={500}>
                {text}
              </Text>
            </Group>
            {limited && (
              <div role="progressbar" aria-label={`${line.label}: ${text}`} aria-valuenow={Math.round(percent)} aria-valuemin={0} aria-valuemax={100}>
                <Progress value={percent} color={color(percent)} size="md" aria-hidden />
              </div>
            )}
          </Stack>
        );
      })}
    </Stack>
  );
}
