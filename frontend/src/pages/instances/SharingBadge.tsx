import { Badge, Text, Tooltip } from "@mantine/core";

import type { Sharing } from "../../components/SharingModal";

/** "None", "All Projects" or "Selected: a, b" (a badge with the list in a tooltip). */
export function SharingBadge({ sharing }: { sharing: Sharing }) {
  if (sharing.mode === "NONE") {
    return (
      <Text size="sm" c="dimmed">
        None
      </Text>
    );
  }
  if (sharing.mode === "ALL_PROJECTS") {
    return (
      <Badge variant="light" color="teal">
        All Projects
      </Badge>
    );
  }
  const names = sharing.projects.map((p) => p.displayName || p.name).join(", ");
  return (
    <Tooltip label={names || "No project you can see"} disabled={!names}>
      <Badge variant="light" color="teal" tt="none">
        {sharing.projects.length === 1 ? `Shared with ${names}` : `${sharing.projects.length} projects`}
      </Badge>
    </Tooltip>
  );
}
