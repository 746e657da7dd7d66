import { Alert, Badge, Button, Group, Modal, MultiSelect, Radio, Stack, Text, Tooltip } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { IconAlertTriangle } from "@tabler/icons-react";
import { useState, type FormEvent } from "react";
import { useMutation } from "urql";

import { useAuth } from "../../app/auth";
import { describeError, errorsByField, unplacedErrors } from "../../components/errors";
import { graphql } from "../../gql";
import type { SharingMode } from "../../gql/graphql";

export const InstanceSharingSetDocument = graphql(`
  mutation InstanceSharingSet($id: ID!, $sharing: SharingInput!) {
    setComputeInstanceSharing(id: $id, sharing: $sharing) {
      computeInstance {
        id
        updatedAt
        sharing {
          mode
          projects {
            id
            name
            displayName
          }
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

/** The system project holds the platform's own things; nothing is shared with it. */
const SYSTEM_PROJECT = "gpupaas-system";

export interface Sharing {
  mode: SharingMode;
  projects: readonly { id: string; name: string; displayName: string }[];
}

export interface SharingTarget {
  id: string;
  name: string;
  displayName: string;
  /** The project it belongs to (never a target). */
  project: string;
  sharing: Sharing;
}

const MODES: { value: SharingMode; label: string; help: string }[] = [
  { value: "NONE", label: "None", help: "Only this project sees the instance (the default)." },
  { value: "ALL_PROJECTS", label: "All Projects", help: "Every project sees the instance, read-only." },
  { value: "SELECTED_PROJECTS", label: "Selected Projects", help: "The projects you choose see the instance, read-only." },
];

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

function SharingForm({ target, onClose, onSaved }: { target: SharingTarget; onClose: () => void; onSaved: (sharing: Sharing) => void }) {
  const { projects } = useAuth();
  const [mode, setMode] = useState<SharingMode>(target.sharing.mode);
  const [selected, setSelected] = useState<string[]>(target.sharing.projects.map((p) => p.name));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [{ fetching }, save] = useMutation(InstanceSharingSetDocument);

  const options = projects
    .filter((p) => p.name !== target.project && p.name !== SYSTEM_PROJECT)
    .map((p) => ({ value: p.name, label: p.displayName && p.displayName !== p.name ? `${p.displayName} (${p.name})` : p.name }));
  for (const name of selected) {
    if (!options.some((o) => o.value === name)) options.push({ value: name, label: name });
  }

  const projectsError = Object.entries(errors)
    .filter(([key]) => key === "sharing.projects" || key.startsWith("sharing.projects."))
    .map(([key, message]) => {
      const index = /^sharing\.projects\.(\d+)$/.exec(key);
      return index ? `${selected[Number(index[1])] ?? "?"}: ${message}` : message;
    })
    .join("; ");
  const summary = unplacedErrors(errors, ["sharing.projects"]);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (mode === "SELECTED_PROJECTS" && selected.length === 0) {
      setErrors({ "sharing.projects": "Choose at least one project" });
      return;
    }
    const result = await save({
      id: target.id,
      sharing: { mode, projects: mode === "SELECTED_PROJECTS" ? selected : null },
    });
    if (result.error) {
      setErrors({ "": describeError(result.error) ?? "Sharing was not changed." });
      return;
    }
    const payload = result.data?.setComputeInstanceSharing;
    if (payload?.userErrors.length) {
      setErrors(errorsByField(payload.userErrors));
      return;
    }
    if (payload?.computeInstance) {
      notifications.show({ color: "green", title: "Sharing saved", message: `Sharing of “${target.displayName}” is updated.` });
      onSaved(payload.computeInstance.sharing);
    }
  };

  return (
    <form onSubmit={submit} noValidate>
      <Stack gap="md">
        <Text size="sm">
          Share <b>{target.displayName}</b> with other projects: their members see it and its status, read-only.
        </Text>
        <Radio.Group label="Share with" value={mode} onChange={(value) => setMode(value as SharingMode)}>
          <Stack gap="xs" mt="xs">
            {MODES.map((option) => (
              <Radio key={option.value} value={option.value} label={option.label} description={option.help} />
            ))}
          </Stack>
        </Radio.Group>
        {mode === "SELECTED_PROJECTS" && (
          <MultiSelect
            label="Projects"
            placeholder={options.length ? "Choose projects" : undefined}
            data={options}
            value={selected}
            onChange={setSelected}
            searchable
            nothingFoundMessage="No such project"
            error={projectsError || undefined}
            description={options.length === 0 ? "You are a member of no other project." : undefined}
            comboboxProps={{ withinPortal: true }}
          />
        )}
        {summary.length > 0 && (
          <Alert color="red" icon={<IconAlertTriangle size={18} />} role="alert">
            {summary.join("; ")}
          </Alert>
        )}
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button type="submit" loading={fetching}>
            Save
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

/** "Manage Sharing" of a compute instance: None, All Projects or Selected Projects. */
export function SharingModal({
  target,
  onClose,
  onSaved,
}: {
  target: SharingTarget | null;
  onClose: () => void;
  onSaved: (id: string, sharing: Sharing) => void;
}) {
  return (
    <Modal opened={target !== null} onClose={onClose} title="Manage Sharing" centered size="lg">
      {target && (
        <SharingForm
          key={target.id}
          target={target}
          onClose={onClose}
          onSaved={(sharing) => {
            onSaved(target.id, sharing);
            onClose();
          }}
        />
      )}
    </Modal>
  );
}
