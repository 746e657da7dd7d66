import { Group, Stack, Text } from "@mantine/core";

/** One group's GPU-hours on one UTC day. */
export interface DayValue {
  day: string | null;
  group: string;
  gpuHours: number;
}

const COLORS = ["#228be6", "#40c057", "#fab005", "#fa5252", "#7950f2", "#15aabf", "#fd7e14", "#e64980", "#82c91e", "#868e96"];

/** Every UTC day from `from` to `to` (ISO dates, both included). */
export function daysBetween(from: string, to: string): string[] {
  const days: string[] = [];
  const start = Date.parse(`${from}T00:00:00Z`);
  const end = Date.parse(`${to}T00:00:00Z`);
  if (Number.isNaN(start) || Number.isNaN(end)) return days;
  for (let t = start; t <= end && days.length < 400; t += 86_400_000) days.push(new Date(t).toISOString().slice(0, 10));
  return days;
}

export function colorOf(groups: string[], group: string): string {
  const index = groups.indexOf(group);
  return COLORS[(index < 0 ? 0 : index) % COLORS.length];
}

/** A round step for the axis: 1, 2 or 5 times a power of ten, about a quarter of `max`. */
function step(max: number): number {
  if (max <= 0) return 1;
  const rough = max / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  return [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough) ?? power * 10;
}

/** GPU-hours per day, stacked by group: plain SVG, one bar per day, a <title> on each piece. */
export function UsageChart({ from, to, values, groups }: { from: string; to: string; values: DayValue[]; groups: string[] }) {
  const days = daysBetween(from, to);
  const byDay = new Map<string, DayValue[]>();
  for (const value of values) if (value.day) byDay.set(value.day, [...(byDay.get(value.day) ?? []), value]);
  const totals = days.map((day) => (byDay.get(day) ?? []).reduce((sum, v) => sum + v.gpuHours, 0));
  const max = Math.max(0, ...totals);
  const unit = step(max);
  const top = Math.max(unit, Math.ceil(max / unit) * unit);
  const width = 760;
  const height = 240;
  const left = 48;
  const bottom = 24;
  const plot = height - bottom - 8;
  const slot = (width - left - 8) / Math.max(1, days.length);
  const bar = Math.max(1, slot * 0.7);
  const ticks = Array.from({ length: Math.round(top / unit) + 1 }, (_, i) => i * unit);
  const labelEvery = Math.max(1, Math.ceil(days.length / 10));
  return (
    <Stack gap="xs">
      <svg viewBox={`0 0 ${width} ${height}`} width="100%" role="img" aria-label="GPU-hours per day" data-testid="usage-chart">
        {ticks.map((tick) => {
          const y = 8 + plot - (tick / top) * plot;
          return (
            <g key={tick}>
              <line x1={left} x2={width - 8} y1={y} y2={y} stroke="#dee2e6" strokeWidth={1} />
              <text x={left - 6} y={y + 4} fontSize={10} textAnchor="end" fill="#868e96">
                {Number(tick.toPrecision(6)).toLocaleString("en", { maximumSignificantDigits: 6 })}
              </text>
            </g>
          );
        })}
        {days.map((day, i) => {
          const x = left + i * slot + (slot - bar) / 2;
          let y = 8 + plot;
          return (
            <g key={day}>
              {groups.map((group) => {
                const value = (byDay.get(day) ?? []).find((v) => v.group === group);
                if (!value || value.gpuHours <= 0) return null;
                const h = (value.gpuHours / top) * plot;
                y -= h;
                return (
                  <rect key={group} x={x} y={y} width={bar} height={h} fill={colorOf(groups, group)} data-testid={`bar-${day}-${group}`}>
                    <title>{`${day} · ${group}: ${value.gpuHours.toFixed(2)} GPU-hours`}</title>
                  </rect>
                );
              })}
              {i % labelEvery === 0 && (
                <text x={x + bar / 2} y={height - 8} fontSize={10} textAnchor="middle" fill="#868e96">
                  {day.slice(5)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <Group gap="md" aria-label="Legend">
        {groups.map((group) => (
          <Group key={group} gap={6} wrap="nowrap">
            <svg width={10} height={10} aria-hidden>
              <rect width={10} height={10} fill={colorOf(groups, group)} />
            </svg>
            <Text size="xs">{group}</Text>
          </Group>
        ))}
      </Group>
    </Stack>
  );
}
