import { Badge, Tooltip } from "@mantine/core";

import { useAuth } from "../../app/auth";
import { useProject } from "../../app/project";
import type { VersionState } from "../../gql/graphql";

export const VERSION_STATES: { value: VersionState; label: string; help: string }[] = [
  { value: "DRAFT", label: "Draft", help: "Being prepared: compute profiles cannot pin it yet." },
  { value: "ACTIVE", label: "Active", help: "New and edited compute profiles can pin it." },
  { value: "DISABLED", label: "Disabled", help: "Retired: profiles that pin it keep it, no new profile can pin it." },
];

const STATE_COLORS: Record<string, string> = { DRAFT: "gray", ACTIVE: "green", DISABLED: "red" };

export function stateLabel(state: string): string {
  return VERSION_STATES.find((s) => s.value === state)?.label ?? state;
}

/** A template version's state (Draft, Active, Disabled). */
export function VersionStateBadge({ state, version }: { state: string; version?: string }) {
  const badge = (
    <Badge color={STATE_COLORS[state] ?? "gray"} variant="light" tt="none" data-state={state}>
      {version ? `${version} · ${stateLabel(state)}` : stateLabel(state)}
    </Badge>
  );
  const help = VERSION_STATES.find((s) => s.value === state)?.help;
  return help ? (
    <Tooltip label={help} withinPortal>
      {badge}
    </Tooltip>
  ) : (
    badge
  );
}

export function BuiltInBadge() {
  return (
    <Tooltip label="Shipped with gpupaas: every project may pin its versions; only platform admins change it.">
      <Badge variant="light" color="violet" size="sm">
        Built-in
      </Badge>
    </Tooltip>
  );
}

/** Whether the caller may change a template: its project's admins; platform admins for built-ins. */
export function useCanManage(): (template: { project: { name: string } }) => boolean {
  const { project, isAdmin } = useProject();
  const { me } = useAuth();
  return (template) => (template.project.name === project ? isAdmin : Boolean(me?.isPlatformAdmin));
}
