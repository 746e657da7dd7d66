import {
  Alert,
  Anchor,
  Badge,
  Breadcrumbs,
  Button,
  Fieldset,
  Group,
  Radio,
  Select,
  SimpleGrid,
  Stack,
  Text,
  TextInput,
  Textarea,
  Title,
} from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { IconAlertTriangle, IconLock } from "@tabler/icons-react";
import { useState, type FormEvent } from "react";
import { Link, useNavigate, useParams } from "react-router-dom";
import { useMutation, useQuery } from "urql";

import { useAuth } from "../../app/auth";
import { useProject } from "../../app/project";
import { ConfirmButton } from "../../components/ConfirmButton";
import { describeError, errorsByField, type ServerError } from "../../components/errors";
import { FormErrors } from "../../components/FormErrors";
import { Section } from "../../components/Section";
import { toPairs, type Pair } from "../../components/KeyValueEditor";
import { ErrorState, Loading } from "../../components/states";
import type { ImagePullPolicy, InstanceTemplateFieldsFragment, Vendor } from "../../gql/graphql";
import { canWrite } from "./InstanceTemplatesPage";
import {
  InstanceTemplateCreateDocument,
  InstanceTemplateDeleteDocument,
  InstanceTemplateDetailDocument,
  InstanceTemplateUpdateDocument,
} from "./queries";
import {
  CommandEditor,
  EnvEditor,
  PULL_POLICIES,
  PortsEditor,
  VENDORS,
  pairsInput,
  portsInput,
  toPortRows,
  type PortRow,
} from "./spec";
import {
  DEFAULT_STORAGE,
  NO_RESOURCES,
  ResourcesEditor,
  StorageEditor,
  resourcesInput,
  storageInput,
  toResourcesRow,
  toStorageRow,
  type ResourcesRow,
  type StorageRow,
} from "./storage";

export interface TemplateFormState {
  scope: "project" | "global";
  name: string;
  displayName: string;
  description: string;
  vendor: Vendor | null;
  image: string;
  imagePullPolicy: ImagePullPolicy;
  command: string[];
  containerDisk: string;
  mountPath: string;
  ports: PortRow[];
  env: Pair[];
  /** A MIG profile's resource its services ask for; "" for whole GPUs. */
  gpuPartition: string;
  /** The name of the project's image pull secret; "" for none. */
  imagePullSecret: string;
  storage: StorageRow;
  resources: ResourcesRow;
  /** SSH access: the label of the port its SSH server listens on ("" for none), and the user. */
  sshPort: string;
  sshUser: string;
}

const EMPTY: TemplateFormState = {
  scope: "project",
  name: "",
  displayName: "",
  description: "",
  vendor: null,
  image: "",
  imagePullPolicy: "IF_NOT_PRESENT",
  command: [],
  containerDisk: "15Gi",
  mountPath: "/workspace",
  ports: [],
  env: [],
  gpuPartition: "",
  imagePullSecret: "",
  storage: DEFAULT_STORAGE,
  resources: NO_RESOURCES,
  sshPort: "",
  sshUser: "root",
};

function fromTemplate(t: InstanceTemplateFieldsFragment): TemplateFormState {
  return {
    scope: t.project ? "project" : "global",
    name: t.name,
    displayName: t.displayName,
    description: t.description ?? "",
    vendor: t.vendor,
    image: t.image,
    imagePullPolicy: t.imagePullPolicy,
    command: [...t.command],
    containerDisk: t.containerDisk,
    mountPath: t.mountPath,
    ports: toPortRows(t.ports),
    env: toPairs(t.env),
    gpuPartition: t.gpuPartition ?? "",
    imagePullSecret: t.imagePullSecret ?? "",
    storage: toStorageRow(t.storage),
    resources: toResourcesRow(t.resources),
    sshPort: t.ssh?.port ?? "",
    sshUser: t.ssh?.user ?? "root",
  };
}

const PLACED = [
  "project",
  "name",
  "displayName",
  "description",
  "vendor",
  "image",
  "imagePullPolicy",
  "command",
  "containerDisk",
  "mountPath",
  "ports",
  "env",
  "gpuPartition",
  "imagePullSecret",
  "storage",
  "resources",
  "ssh",
];

/** The TCP ports' labels to choose the SSH port from (and the chosen one, even if since renamed). */
function sshPortChoices(state: TemplateFormState): string[] {
  const labels = state.ports.filter((p) => p.protocol === "TCP" && p.name.trim()).map((p) => p.name.trim());
  return [...new Set(state.sshPort && !labels.includes(state.sshPort) ? [...labels, state.sshPort] : labels)];
}

/** Client-side checks of the required fields (the server checks everything else). */
function required(state: TemplateFormState, editing: boolean): Record<string, string> {
  const errors: Record<string, string> = {};
  if (!editing && !state.name.trim()) errors.name = "A name is required";
  if (!state.vendor) errors.vendor = "Choose a vendor";
  if (!state.image.trim()) errors.image = 'An image is required, like "ubuntu:24.04"';
  state.ports.forEach((port, index) => {
    if (!port.name.trim()) errors[`ports.${index}.name`] = "A port needs a name";
    if (port.port === "") errors[`ports.${index}.port`] = "Enter a port number (1-65535)";
  });
  return errors;
}

function TemplateForm({ template }: { template: InstanceTemplateFieldsFragment | null }) {
  const { project, isAdmin } = useProject();
  const { me } = useAuth();
  const navigate = useNavigate();
  const isPlatformAdmin = me?.isPlatformAdmin ?? false;
  const editing = template !== null;
  const readOnly = template !== null && !canWrite(template, isPlatformAdmin, isAdmin);
  const [state, setState] = useState<TemplateFormState>(template ? fromTemplate(template) : EMPTY);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [{ fetching: creating }, create] = useMutation(InstanceTemplateCreateDocument);
  const [{ fetching: updating }, update] = useMutation(InstanceTemplateUpdateDocument);
  const [, remove] = useMutation(InstanceTemplateDeleteDocument);
  const list = `/p/${project}/studio/instance-templates`;

  const set = <K extends keyof TemplateFormState>(key: K, value: TemplateFormState[K]) =>
    setState((current) => ({ ...current, [key]: value }));

  async function submit(event: FormEvent) {
    event.preventDefault();
    const missing = required(state, editing);
    if (Object.keys(missing).length) {
      setErrors(missing);
      return;
    }
    setErrors({});
    const spec = {
      displayName: state.displayName.trim(),
      description: state.description.trim(),
      vendor: state.vendor!,
      image: state.image.trim(),
      imagePullPolicy: state.imagePullPolicy,
      command: state.command,
      containerDisk: state.containerDisk.trim(),
      mountPath: state.mountPath.trim(),
      ports: portsInput(state.ports),
      env: pairsInput(state.env),
      gpuPartition: state.gpuPartition.trim(),
      imagePullSecret: state.imagePullSecret.trim(),
      storage: storageInput(state.storage),
      resources: resourcesInput(state.resources),
    };
    // SSH access on the named port; none: null when creating, a port of "" removes it when editing.
    const sshPort = state.sshPort.trim();
    const ssh = sshPort ? { port: sshPort, user: state.sshUser.trim() || null } : null;
    let userErrors: readonly ServerError[];
    let saved: { displayName: string } | null | undefined;
    if (template) {
      const result = await update({ input: { id: template.id, ...spec, ssh: ssh ?? (template.ssh ? { port: "" } : null) } });
      if (result.error || !result.data) {
        setErrors({ "": describeError(result.error) ?? "No answer from the server." });
        return;
      }
      userErrors = result.data.updateInstanceTemplate.userErrors;
      saved = result.data.updateInstanceTemplate.instanceTemplate;
    } else {
      const result = await create({
        input: {
          project: state.scope === "global" ? null : project,
          name: state.name.trim(),
          ...spec,
          ssh,
          displayName: spec.displayName || null,
          description: spec.description || null,
          containerDisk: spec.containerDisk || null,
          mountPath: spec.mountPath || null,
        },
      });
      if (result.error || !result.data) {
        setErrors({ "": describeError(result.error) ?? "No answer from the server." });
        return;
      }
      userErrors = result.data.createInstanceTemplate.userErrors;
      saved = result.data.createInstanceTemplate.instanceTemplate;
    }
    if (userErrors.length || !saved) {
      setErrors(errorsByField(userErrors));
      return;
    }
    notifications.show({ color: "green", message: `Instance template "${saved.displayName}" saved.` });
    navigate(list);
  }

  async function onDelete() {
    if (!template) return;
    const result = await remove({ id: template.id });
    const payload = result.data?.deleteInstanceTemplate;
    if (result.error || !payload) {
      setErrors({ "": describeError(result.error) ?? "No answer from the server." });
      return;
    }
    if (payload.userErrors.length) {
      setErrors({ "": payload.userErrors.map((e) => e.message).join("; ") });
      return;
    }
    notifications.show({ color: "green", message: `Instance template "${template.displayName}" deleted.` });
    navigate(list);
  }

  const title = !template ? "Add Instance Template" : readOnly ? template.displayName : `Edit ${template.displayName}`;

  return (
    <Stack maw={960}>
      <Breadcrumbs>
        <Anchor component={Link} to={list}>
          Instance Templates
        </Anchor>
        <Text>{template ? template.name : "New"}</Text>
      </Breadcrumbs>
      <Group justify="space-between">
        <Title order={2}>{title}</Title>
        {template && (
          <Group gap={6}>
            {template.builtIn && <Badge color="indigo" variant="outline">Built-in</Badge>}
            {template.project ? <Badge color="gray" variant="outline">Project</Badge> : <Badge color="teal" variant="outline">Global</Badge>}
          </Group>
        )}
      </Group>
      {readOnly && (
        <Alert icon={<IconLock size={18} />} color="gray" title="Read only">
          This is a global template: only platform admins may change it. You can launch services from it.
        </Alert>
      )}
      {template?.builtIn && !readOnly && (
        <Alert icon={<IconAlertTriangle size={18} />} color="yellow">
          A built-in template ships with gpupaas: your changes stay (the next start does not overwrite them), but it
          cannot be deleted.
        </Alert>
      )}
      <form onSubmit={submit} noValidate>
        <Fieldset variant="unstyled" disabled={readOnly}>
          <Stack>
            <Section title="General">
              <Radio.Group
                label="Scope"
                description={
                  editing
                    ? "The scope is fixed once the template exists."
                    : isPlatformAdmin
                      ? "A global template is offered to every project."
                      : "Only platform admins may create global templates."
                }
                value={state.scope}
                onChange={(value) => set("scope", value as TemplateFormState["scope"])}
                error={errors.project}
              >
                <Group mt={6}>
                  <Radio value="project" label={`This project (${project})`} disabled={editing} />
                  <Radio value="global" label="Global (every project)" disabled={editing || !isPlatformAdmin} />
                </Group>
              </Radio.Group>
              <SimpleGrid cols={{ base: 1, sm: 2 }}>
                <TextInput
                  label="Name"
                  description={editing ? "The unique name cannot change." : "Unique; lowercase letters, digits and \"-\". Cannot change later."}
                  placeholder="jupyterlab-pytorch"
                  required={!editing}
                  readOnly={editing}
                  value={state.name}
                  onChange={(event) => set("name", event.currentTarget.value)}
                  error={errors.name}
                />
                <TextInput
                  label="Display name"
                  description="What people see; defaults to the name."
                  placeholder="JupyterLab (PyTorch, NVIDIA)"
                  value={state.displayName}
                  onChange={(event) => set("displayName", event.currentTarget.value)}
                  error={errors.displayName}
                />
              </SimpleGrid>
              <Textarea
                label="Description"
                autosize
                minRows={2}
                value={state.description}
                onChange={(event) => set("description", event.currentTarget.value)}
                error={errors.description}
              />
              <Select
                label="Vendor"
                description="The GPU vendor, or CPU for instances without GPUs."
                placeholder="Choose a vendor"
                required
                data={VENDORS}
                value={state.vendor}
                allowDeselect={false}
                onChange={(value) => set("vendor", value as Vendor | null)}
                error={errors.vendor}
                maw={320}
              />
            </Section>
            <Section title="Container">
              <TextInput
                label="Image"
                description="A container image reference."
                placeholder="nvcr.io/nvidia/pytorch:25.01-py3"
                required
                styles={{ input: { fontFamily: "var(--mantine-font-family-monospace)" } }}
                value={state.image}
                onChange={(event) => set("image", event.currentTarget.value)}
                error={errors.image}
              />
              <SimpleGrid cols={{ base: 1, sm: 3 }}>
                <Select
                  label="Image pull policy"
                  data={PULL_POLICIES}
                  allowDeselect={false}
                  value={state.imagePullPolicy}
                  onChange={(value) => value && set("imagePullPolicy", value as ImagePullPolicy)}
                  error={errors.imagePullPolicy}
                />
                <TextInput
                  label="Container disk"
                  description="Root filesystem size, e.g. 15Gi"
                  placeholder="15Gi"
                  value={state.containerDisk}
                  onChange={(event) => set("containerDisk", event.currentTarget.value)}
                  error={errors.containerDisk}
                />
                <TextInput
                  label="Mount path"
                  description="Where the workspace volume is mounted"
                  placeholder="/workspace"
                  value={state.mountPath}
                  onChange={(event) => set("mountPath", event.currentTarget.value)}
                  error={errors.mountPath}
                />
              </SimpleGrid>
              <SimpleGrid cols={{ base: 1, sm: 2 }}>
                <TextInput
                  label="GPU partition"
                  description="NVIDIA only: a MIG profile's resource its services ask for instead of whole GPUs, like nvidia.com/mig-1g.10gb. Empty: whole GPUs."
                  placeholder="nvidia.com/mig-1g.10gb"
                  value={state.gpuPartition}
                  onChange={(event) => set("gpuPartition", event.currentTarget.value)}
                  error={errors.gpuPartition}
                />
                <TextInput
                  label="Pull secret"
                  description="For a private image: the name of one of the project's image pull secrets (a global template: each project's of that name). Empty: none."
                  placeholder="ngc"
                  value={state.imagePullSecret}
                  onChange={(event) => set("imagePullSecret", event.currentTarget.value)}
                  error={errors.imagePullSecret}
                />
              </SimpleGrid>
            </Section>
            <Section title="Start command">
              <CommandEditor value={state.command} onChange={(command) => set("command", command)} errors={errors} label="Arguments" />
            </Section>
            <Section title="Ports">
              <PortsEditor value={state.ports} onChange={(ports) => set("ports", ports)} errors={errors} label={null} />
            </Section>
            <Section title="SSH access">
              <Text size="xs" c="dimmed">
                gpupaas starts an SSH server beside the start command (which it needs), from an image of its own: nothing is needed from yours. It lets the user in with the
                keys of the service&apos;s owner and the keys added to the service.
              </Text>
              <SimpleGrid cols={{ base: 1, sm: 2 }}>
                <Select
                  label="SSH port"
                  description="One of the TCP ports above. None: no SSH server."
                  placeholder="None"
                  clearable
                  data={sshPortChoices(state)}
                  value={state.sshPort || null}
                  onChange={(value) => set("sshPort", value ?? "")}
                  error={errors["ssh.port"] ?? errors.ssh}
                />
                <TextInput
                  label="SSH user"
                  description="An account of the image (its /etc/passwd), like root or jovyan"
                  placeholder="root"
                  disabled={!state.sshPort}
                  value={state.sshUser}
                  onChange={(event) => set("sshUser", event.currentTarget.value)}
                  error={errors["ssh.user"]}
                />
              </SimpleGrid>
            </Section>
            <Section title="Environment">
              <EnvEditor value={state.env} onChange={(env) => set("env", env)} errors={errors} />
            </Section>
            <Section title="Storage, CPU and memory">
              <StorageEditor value={state.storage} onChange={(storage) => set("storage", storage)} errors={errors} />
              <ResourcesEditor value={state.resources} onChange={(resources) => set("resources", resources)} errors={errors} />
            </Section>
          </Stack>
        </Fieldset>
        <Stack mt="md">
          <FormErrors title="Not saved" errors={errors} placed={PLACED} />
          <Group justify="space-between">
            <Group>
              {template && !readOnly && !template.builtIn && (
                <ConfirmButton
                  variant="subtle"
                  color="red"
                  label="Delete"
                  title="Delete instance template"
                  message={`Delete "${template.displayName}"? Service instances already created from it keep their copy. This cannot be undone.`}
                  confirmLabel="Delete"
                  onConfirm={onDelete}
                />
              )}
            </Group>
            <Group>
              <Button variant="default" component={Link} to={list}>
                {readOnly ? "Back" : "Cancel"}
              </Button>
              {!readOnly && (
                <Button type="submit" loading={creating || updating}>
                  {editing ? "Save Changes" : "Save"}
                </Button>
              )}
            </Group>
          </Group>
        </Stack>
      </form>
    </Stack>
  );
}

export function InstanceTemplateNewPage() {
  return <TemplateForm template={null} />;
}

export function InstanceTemplateEditPage() {
  const { id = "" } = useParams();
  const [{ data, error }, refetch] = useQuery({
    query: InstanceTemplateDetailDocument,
    variables: { id },
    requestPolicy: "network-only",
  });
  if (error && !data) {
    return (
      <ErrorState
        message={describeError(error) ?? "Could not load the template."}
        onRetry={() => refetch({ requestPolicy: "network-only" })}
      />
    );
  }
  if (!data) return <Loading label="Loading the template" />;
  if (!data.instanceTemplate) return <ErrorState message="No such instance template (it may have been deleted)." />;
  return <TemplateForm key={data.instanceTemplate.id} template={data.instanceTemplate} />;
}
