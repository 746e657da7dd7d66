/* "Edit" of a STOPPED or FAILED service instance: its display name, GPU count, command, env,
 * ports, storage and CPU/memory, saved at once and applied at its next start
 * (updateServiceInstance). The server checks everything: its refusal (the service is running, a
 * volume that exists cannot change its mode, over the compute instance's CPU...) shows next to the
 * field, or above the buttons. */
import { Button, Group, Modal, NumberInput, Stack, Text, TextInput, Tooltip } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { IconPencil } from "@tabler/icons-react";
import { useState, type FormEvent } from "react";
import { useMutation, useQuery } from "urql";

import { toPairs, type Pair } from "../../components/KeyValueEditor";
import { describeError, errorsByField } from "../../components/errors";
import { FormErrors } from "../../components/FormErrors";
import type { ServiceDetailQuery, ServiceStatus } from "../../gql/graphql";
import { CommandEditor, EnvEditor, PortsEditor, pairsInput, portsInput, toPortRows, type PortRow } from "../instance-templates/spec";
import {
  ResourcesEditor,
  StorageEditor,
  resourcesInput,
  storageInput,
  toResourcesRow,
  toStorageRow,
  type ResourcesRow,
  type StorageRow,
} from "../instance-templates/storage";
import { ServiceNamespaceClaimsDocument, ServiceUpdateDocument } from "./queries";

type Service = NonNullable<ServiceDetailQuery["serviceInstance"]>;

const EDITABLE: readonly ServiceStatus[] = ["STOPPED", "FAILED"];
const PLACED = ["displayName", "gpuCount", "command", "env", "ports", "storage", "resources"];

interface EditState {
  displayName: string;
  gpuCount: number | "";
  command: string[];
  env: Pair[];
  ports: PortRow[];
  storage: StorageRow;
  resources: ResourcesRow;
}

function fromService(service: Service): EditState {
  return {
    displayName: service.displayName,
    gpuCount: service.gpuCount,
    command: [...service.command],
    env: toPairs(service.env),
    ports: toPortRows(service.ports),
    storage: toStorageRow(service.storage),
    resources: toResourcesRow(service.resources),
  };
}

/** Why the caller cannot edit it now, or null: the server's (editRefusal) while the status is the
 * one it was read in, else by the live status. */
export function editRefusal(service: Service, status: ServiceStatus): string | null {
  if (status === service.status) return service.editRefusal ?? null;
  return EDITABLE.includes(status)
    ? null
    : `cannot edit a service instance that is ${status}: stop it first (a STOPPED or FAILED one is edited, and its changes apply at its next start)`;
}

export function EditServiceButton({ service, status, onSaved }: { service: Service; status: ServiceStatus; onSaved: () => void }) {
  const [opened, setOpened] = useState(false);
  const refusal = editRefusal(service, status);
  const button = (
    <Button variant="default" leftSection={<IconPencil size={16} />} disabled={refusal !== null} onClick={() => setOpened(true)}>
      Edit
    </Button>
  );
  return (
    <>
      {refusal ? (
        <Tooltip label={refusal} multiline w={320}>
          <span data-testid="edit-refusal" data-reason={refusal}>
            {button}
          </span>
        </Tooltip>
      ) : (
        button
      )}
      {opened && (
        <EditServiceModal
          service={service}
          onClose={() => setOpened(false)}
          onSaved={() => {
            setOpened(false);
            onSaved();
          }}
        />
      )}
    </>
  );
}

function EditServiceModal({ service, onClose, onSaved }: { service: Service; onClose: () => void; onSaved: () => void }) {
  const [state, setState] = useState<EditState>(() => fromService(service));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [{ fetching }, save] = useMutation(ServiceUpdateDocument);
  const [claimsResult] = useQuery({
    query: ServiceNamespaceClaimsDocument,
    variables: { id: service.computeInstance.id },
    pause: state.storage.mode !== "EXISTING_CLAIM",
  });
  const claims = claimsResult.data?.computeInstance?.namespaceUsage?.volumeClaims;
  const set = <K extends keyof EditState>(key: K, value: EditState[K]) => setState((current) => ({ ...current, [key]: value }));

  async function submit(event: FormEvent) {
    event.preventDefault();
    setErrors({});
    const result = await save({
      input: {
        id: service.id,
        displayName: state.displayName.trim(),
        gpuCount: state.gpuCount === "" ? null : state.gpuCount,
        command: state.command,
        env: pairsInput(state.env),
        ports: portsInput(state.ports),
        storage: storageInput(state.storage),
        resources: resourcesInput(state.resources),
      },
    });
    const payload = result.data?.updateServiceInstance;
    if (result.error || !payload) {
      setErrors({ "": describeError(result.error) ?? "No answer from the server." });
      return;
    }
    if (payload.userErrors.length || !payload.serviceInstance) {
      const found = errorsByField(payload.userErrors);
      // The refusal of the service itself (its status) is about no field of the form.
      if (found.id) {
        found[""] = found[""] ? `${found[""]}; ${found.id}` : found.id;
        delete found.id;
      }
      setErrors(found);
      return;
    }
    notifications.show({ color: "green", message: `"${service.name}" saved: the changes apply at its next start.` });
    onSaved();
  }

  return (
    <Modal opened onClose={onClose} title={`Edit ${service.displayName}`} size="xl">
      <form onSubmit={submit} noValidate>
        <Stack>
          <Text size="sm" c="dimmed">
            Saved now, applied when the service next starts. Its image and template stay as they are.
          </Text>
          <Group grow align="flex-start">
            <TextInput
              label="Display name"
              value={state.displayName}
              onChange={(event) => set("displayName", event.currentTarget.value)}
              error={errors.displayName}
            />
            <NumberInput
              label="GPU count"
              min={0}
              max={64}
              allowDecimal={false}
              allowNegative={false}
              value={state.gpuCount}
              onChange={(value) => set("gpuCount", typeof value === "number" ? value : value === "" ? "" : Number(value))}
              error={errors.gpuCount}
            />
          </Group>
          <CommandEditor value={state.command} onChange={(command) => set("command", command)} errors={errors} />
          <EnvEditor value={state.env} onChange={(env) => set("env", env)} errors={errors} />
          <PortsEditor value={state.ports} onChange={(ports) => set("ports", ports)} errors={errors} />
          <StorageEditor value={state.storage} onChange={(storage) => set("storage", storage)} errors={errors} claims={claims} />
          <ResourcesEditor value={state.resources} onChange={(resources) => set("resources", resources)} errors={errors} />
          <FormErrors title="Not saved" errors={errors} placed={PLACED} />
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
    </Modal>
  );
}
