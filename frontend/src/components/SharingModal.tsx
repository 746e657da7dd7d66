import { Button, Group, Modal, MultiSelect, Radio, Stack, Text } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { useState, type FormEvent } from "react";
import { useMutation } from "urql";

import { useAuth } from "../app/auth";
import { graphql } from "../gql";
import type { SharingInput, SharingMode } from "../gql/graphql";
import { describeError, errorsByField, type ServerError } from "./errors";
import { FormErrors } from "./FormErrors";

/* "Manage Sharing" of what a project may share with others: a compute instance (other projects
 * see it, read-only) or a compute profile (other projects' users see it in their catalog). */

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

export const ProfileSetSharingDocument = graphql(`
  mutation ProfileSetSharing($id: ID!, $sharing: SharingInput!) {
    setComputeProfileSharing(id: $id, sharing: $sharing) {
      computeProfile {
        id
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
  /** The project it belongs to (never offered as a target). */
  project: string;
  sharing: Sharing;
}

export type Shareable = "instance" | "profile";

export const SHARING_LABELS: Record<SharingMode, string> = {
  NONE: "None",
  ALL_PROJECTS: "All Projects",
  SELECTED_PROJECTS: "Selected Projects",
};

const TEXTS: Record<Shareable, { intro: string; help: Record<SharingMode, string> }> = {
  instance: {
    intro: "with other projects: their members see it and its status, read-only.",
    help: {
      NONE: "Only this project sees the instance (the default).",
      ALL_PROJECTS: "Every project sees the instance, read-only.",
      SELECTED_PROJECTS: "The projects you choose see the instance, read-only.",
    },
  },
  profile: {
    intro: "with other projects: their users see it in their catalog and can launch compute instances from it.",
    help: {
      NONE: "Only this project's users see the profile in their catalog (the default).",
      ALL_PROJECTS: "Every project's users see the profile in their catalog.",
      SELECTED_PROJECTS: "The users of the projects you choose see the profile in their catalog.",
    },
  },
};

interface Saved {
  error?: Parameters<typeof describeError>[0];
  userErrors: readonly ServerError[];
  sharing: Sharing | null;
}

/** Sets the sharing of a compute instance or profile: the server's answer, the same for both. */
function useSetSharing(kind: Shareable): [boolean, (id: string, sharing: SharingInput) => Promise<Saved>] {
  const [instance, setInstance] = useMutation(InstanceSharingSetDocument);
  const [profile, setProfile] = useMutation(ProfileSetSharingDocument);
  const save = async (id: string, sharing: SharingInput): Promise<Saved> => {
    if (kind === "instance") {
      const result = await setInstance({ id, sharing });
      const payload = result.data?.setComputeInstanceSharing;
      return { error: result.error, userErrors: payload?.userErrors ?? [], sharing: payload?.computeInstance?.sharing ?? null };
    }
    const result = await setProfile({ id, sharing });
    const payload = result.data?.setComputeProfileSharing;
    return { error: result.error, userErrors: payload?.userErrors ?? [], sharing: payload?.computeProfile?.sharing ?? null };
  };
  return [kind === "instance" ? instance.fetching : profile.fetching, save];
}

/** "Manage Sharing": None, All Projects or Selected Projects (the caller's other projects). */
export function SharingModal({
  kind,
  target,
  onClose,
  onSaved,
}: {
  kind: Shareable;
  /** What to share; null: closed. */
  target: SharingTarget | null;
  onClose: () => void;
  onSaved?: (id: string, sharing: Sharing) => void;
}) {
  return (
    <Modal opened={target !== null} onClose={onClose} title="Manage Sharing" centered size="lg">
      {target && <SharingForm key={target.id} kind={kind} target={target} onClose={onClose} onSaved={onSaved} />}
    </Modal>
  );
}

function SharingForm({
  kind,
  target,
  onClose,
  onSaved,
}: {
  kind: Shareable;
  target: SharingTarget;
  onClose: () => void;
  onSaved?: (id: string, sharing: Sharing) => void;
}) {
  const { projects } = useAuth();
  const [mode, setMode] = useState<SharingMode>(target.sharing.mode);
  const [selected, setSelected] = useState<string[]>(target.sharing.projects.map((p) => p.name));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [saving, save] = useSetSharing(kind);
  const label = target.displayName || target.name;

  const options = projects
    .filter((p) => p.name !== target.project && p.name !== SYSTEM_PROJECT)
    .map((p) => ({ value: p.name, label: p.displayName && p.displayName !== p.name ? `${p.displayName} (${p.name})` : p.name }));
  // Projects shared with earlier stay selectable even when the caller's list does not hold them.
  for (const name of selected) {
    if (!options.some((o) => o.value === name)) options.push({ value: name, label: name });
  }

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (mode === "SELECTED_PROJECTS" && selected.length === 0) {
      setErrors({ "sharing.projects": "Choose at least one project to share with." });
      return;
    }
    setErrors({});
    const saved = await save(target.id, { mode, projects: mode === "SELECTED_PROJECTS" ? selected : null });
    if (saved.error) {
      setErrors({ "": describeError(saved.error) ?? "Sharing was not changed." });
      return;
    }
    if (saved.userErrors.length > 0 || !saved.sharing) {
      setErrors(errorsByField(saved.userErrors));
      return;
    }
    notifications.show({ color: "green", title: "Sharing saved", message: `Sharing of “${label}” is updated.` });
    onSaved?.(target.id, saved.sharing);
    onClose();
  }

  // Errors about one chosen project name it: "sharing.projects.1" -> the second selected project.
  const projectsError = Object.entries(errors)
    .filter(([key]) => key === "sharing.projects" || key.startsWith("sharing.projects."))
    .map(([key, message]) => {
      const index = /^sharing\.projects\.(\d+)$/.exec(key);
      return index && selected[Number(index[1])] ? `${selected[Number(index[1])]}: ${message}` : message;
    })
    .join("; ");

  return (
    <form onSubmit={submit} noValidate>
      <Stack gap="md">
        <Text size="sm">
          Share <b>{label}</b> {TEXTS[kind].intro}
        </Text>
        <Radio.Group label="Share with" value={mode} onChange={(value) => setMode(value as SharingMode)} error={errors["sharing.mode"]}>
          <Stack gap="xs" mt="xs">
            {(Object.keys(SHARING_LABELS) as SharingMode[]).map((value) => (
              <Radio key={value} value={value} label={SHARING_LABELS[value]} description={TEXTS[kind].help[value]} />
            ))}
          </Stack>
        </Radio.Group>
        {mode === "SELECTED_PROJECTS" && (
          <MultiSelect
            label="Projects"
            placeholder={selected.length ? undefined : "Choose projects"}
            data={options}
            value={selected}
            onChange={setSelected}
            searchable
            clearable
            nothingFoundMessage="No such project"
            error={projectsError || undefined}
            description={options.length === 0 ? "You are a member of no other project." : undefined}
            // In the dialog: its options belong to it (and are found in it).
            comboboxProps={{ withinPortal: false }}
          />
        )}
        <FormErrors title="Sharing not saved" errors={errors} placed={mode === "SELECTED_PROJECTS" ? ["sharing.projects", "sharing.mode"] : ["sharing.mode"]} />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button type="submit" loading={saving}>
            Save
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
