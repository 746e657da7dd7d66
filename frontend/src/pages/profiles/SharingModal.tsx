import { Alert, Button, Group, Modal, MultiSelect, Radio, Stack, Text } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { useEffect, useState } from "react";
import { useMutation, useQuery } from "urql";

import { describeError, errorsByField, unplacedErrors } from "../../components/errors";
import { ErrorState, Loading } from "../../components/states";
import { SHARING_LABELS, type SharingModeValue, type SharingValue } from "./common";
import { ProfileSetSharingDocument, ProfileSharingProjectsDocument } from "./operations";

/** The system project holds the built-in templates; nothing is shared with it. */
const SYSTEM_PROJECT = "gpupaas-system";

const MODE_HELP: Record<SharingModeValue, string> = {
  NONE: "Only this project's users see the profile in their catalog (the default).",
  ALL_PROJECTS: "Every project's users see the profile in their catalog.",
  SELECTED_PROJECTS: "The users of the projects you choose see the profile in their catalog.",
};

export interface SharingTarget {
  id: string;
  name: string;
  displayName: string;
  sharing: SharingValue;
}

/** "Manage Sharing" of a compute profile: None, All Projects or Selected Projects. */
export function SharingModal({
  profile,
  ownerProject,
  onClose,
  onSaved,
}: {
  /** The profile to share; null: closed. */
  profile: SharingTarget | null;
  /** The project the profile belongs to (not offered as a target). */
  ownerProject: string;
  onClose: () => void;
  onSaved?: () => void;
}) {
  return (
    <Modal opened={profile !== null} onClose={onClose} title="Manage Sharing" centered size="lg">
      {profile && <SharingForm profile={profile} ownerProject={ownerProject} onClose={onClose} onSaved={onSaved} />}
    </Modal>
  );
}

function SharingForm({
  profile,
  ownerProject,
  onClose,
  onSaved,
}: {
  profile: SharingTarget;
  ownerProject: string;
  onClose: () => void;
  onSaved?: () => void;
}) {
  const [mode, setMode] = useState<SharingModeValue>(profile.sharing.mode);
  const [selected, setSelected] = useState<string[]>(profile.sharing.projects.map((p) => p.name));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [{ data, fetching, error }, refetch] = useQuery({ query: ProfileSharingProjectsDocument });
  const [{ fetching: saving }, save] = useMutation(ProfileSetSharingDocument);

  useEffect(() => {
    setMode(profile.sharing.mode);
    setSelected(profile.sharing.projects.map((p) => p.name));
    setErrors({});
  }, [profile]);

  const options = (data?.projects ?? [])
    .filter((p) => p.name !== ownerProject && p.name !== SYSTEM_PROJECT)
    .map((p) => ({ value: p.name, label: p.displayName && p.displayName !== p.name ? `${p.displayName} (${p.name})` : p.name }));
  // Keep projects shared earlier selectable even when the list does not hold them (yet).
  for (const name of selected) {
    if (!options.some((o) => o.value === name)) options.push({ value: name, label: name });
  }

  async function submit(event: React.FormEvent) {
    event.preventDefault();
    if (mode === "SELECTED_PROJECTS" && selected.length === 0) {
      setErrors({ "sharing.projects": "Choose at least one project to share with." });
      return;
    }
    setErrors({});
    const result = await save({
      id: profile.id,
      sharing: { mode, projects: mode === "SELECTED_PROJECTS" ? selected : null },
    });
    const payload = result.data?.setComputeProfileSharing;
    if (result.error || !payload) {
      setErrors({ "": describeError(result.error) ?? "Could not change the sharing." });
      return;
    }
    if (payload.userErrors.length > 0) {
      setErrors(errorsByField(payload.userErrors));
      return;
    }
    notifications.show({ color: "green", message: `Sharing of "${profile.displayName || profile.name}" saved.` });
    onSaved?.();
    onClose();
  }

  // Errors about one chosen project name it: "sharing.projects.1" -> the second selected project.
  const projectErrors = Object.entries(errors)
    .filter(([key]) => key === "sharing.projects" || key.startsWith("sharing.projects."))
    .map(([key, message]) => {
      const index = Number(key.split(".")[2]);
      return Number.isInteger(index) && selected[index] ? `${selected[index]}: ${message}` : message;
    });
  const others = unplacedErrors(errors, mode === "SELECTED_PROJECTS" ? ["sharing.projects"] : []);

  return (
    <form onSubmit={submit} noValidate>
      <Stack>
        <Text size="sm">
          Share <b>{profile.displayName || profile.name}</b> with other projects: their users see it in their catalog and
          can launch compute instances from it.
        </Text>
        <Radio.Group
          label="Share with"
          value={mode}
          onChange={(value) => setMode(value as SharingModeValue)}
          error={errors["sharing.mode"]}
        >
          <Stack gap="xs" mt="xs">
            {(Object.keys(SHARING_LABELS) as SharingModeValue[]).map((value) => (
              <Radio key={value} value={value} label={SHARING_LABELS[value]} description={MODE_HELP[value]} />
            ))}
          </Stack>
        </Radio.Group>
        {mode === "SELECTED_PROJECTS" &&
          (fetching && !data ? (
            <Loading label="Loading projects" />
          ) : error ? (
            <ErrorState message={describeError(error) ?? "Could not load the projects."} onRetry={() => refetch({ requestPolicy: "network-only" })} />
          ) : (
            <MultiSelect
              label="Projects"
              placeholder={selected.length ? undefined : "Choose projects"}
              data={options}
              value={selected}
              onChange={setSelected}
              searchable
              clearable
              required
              nothingFoundMessage="No other project"
              error={projectErrors.length ? projectErrors.join("; ") : undefined}
              comboboxProps={{ withinPortal: false }}
            />
          ))}
        {others.length > 0 && (
          <Alert color="red" title="Sharing not saved" role="alert">
            <Stack gap={2}>
              {others.map((message) => (
                <Text key={message} size="sm">
                  {message}
                </Text>
              ))}
            </Stack>
          </Alert>
        )}
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
