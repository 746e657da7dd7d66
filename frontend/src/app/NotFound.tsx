/* What a page that does not exist shows, inside the normal frame (navigation, account menu): an
 * unknown path in a project, or another project's URL, with a way back to a project of one's own. */
import { Button, Stack, Text, Title } from "@mantine/core";
import { Link, useParams } from "react-router-dom";

import { useAuth } from "./auth";
import { lastProject } from "./project";

/** The project to send someone back to: the last one used, or the first of theirs. */
export function homeProject(projects: readonly { name: string; displayName?: string | null }[]) {
  const remembered = lastProject();
  return projects.find((p) => p.name === remembered) ?? projects.find((p) => p.name !== "gpupaas-system") ?? projects[0];
}

export function NotFound({ message }: { message?: string }) {
  const { project = "" } = useParams();
  const { projects } = useAuth();
  const known = projects.find((p) => p.name === project);
  const home = known ?? homeProject(projects);
  return (
    <Stack align="flex-start" gap="sm">
      <Title order={2} id="not-found-title">
        Page not found
      </Title>
      <Text c="dimmed">{message ?? "There is nothing at this address. It may have been moved or deleted."}</Text>
      {home && (
        <Button component={Link} to={`/p/${home.name}/dashboard`}>
          Go to {home.displayName || home.name}
        </Button>
      )}
    </Stack>
  );
}
