import {
  ActionIcon,
  Alert,
  Anchor,
  Breadcrumbs,
  Button,
  Checkbox,
  Group,
  SegmentedControl,
  Select,
  SimpleGrid,
  Stack,
  Switch,
  Text,
  TextInput,
  Textarea,
  Title,
} from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { IconLock, IconPlus, IconTrash } from "@tabler/icons-react";
import { useState, type FormEvent } from "react";
import { Link, useNavigate, useParams } from "react-router-dom";
import { useMutation, useQuery } from "urql";

import { useProject } from "../../app/project";
import { describeError, errorsByField, type ServerError } from "../../components/errors";
import { FormErrors } from "../../components/FormErrors";
import { Section } from "../../components/Section";
import { ErrorState, Loading } from "../../components/states";
import type { ClusterDriver, ClusterFieldsFragment, Vendor } from "../../gql/graphql";
import { checkSummary } from "./common";
import { ClusterCreateDocument, ClusterDetailDocument, ClusterUpdateDocument } from "./queries";

const GPU_VENDORS: Vendor[] = ["NVIDIA", "AMD", "INTEL", "ASCEND", "CPU"];
/** What the server uses for a vendor no row names. */
const DEFAULT_RESOURCES: Record<Vendor, string> = {
  NVIDIA: "nvidia.com/gpu",
  AMD: "amd.com/gpu",
  INTEL: "gpu.intel.com/i915",
  ASCEND: "huawei.com/Ascend910",
  CPU: "nvidia.com/gpu",
};

interface ResourceRow {
  vendor: Vendor | null;
  resourceName: string;
}

const PLACED = [
  "name",
  "displayName",
  "driver",
  "kubeconfig",
  "inCluster",
  "context",
  "accessAddress",
  "gpuResourceNames",
  "isDefault",
];

function ClusterForm({ cluster }: { cluster: ClusterFieldsFragment | null }) {
  const { project } = useProject();
  const navigate = useNavigate();
  const editing = cluster !== null;
  const [name, setName] = useState(cluster?.name ?? "");
  const [displayName, setDisplayName] = useState(cluster?.displayName ?? "");
  const [driver, setDriver] = useState<ClusterDriver>(cluster?.driver ?? "KUBERNETES");
  // Write-only: a stored kubeconfig is never shown; a new one replaces it.
  const [kubeconfig, setKubeconfig] = useState("");
  const [removeKubeconfig, setRemoveKubeconfig] = useState(false);
  const [context, setContext] = useState("");
  const [inCluster, setInCluster] = useState(cluster?.inCluster ?? false);
  const [accessAddress, setAccessAddress] = useState(cluster?.accessAddress ?? "");
  const [resources, setResources] = useState<ResourceRow[]>(
    cluster?.gpuResourceNames.map((r) => ({ vendor: r.vendor, resourceName: r.resourceName })) ?? [],
  );
  const [isDefault, setIsDefault] = useState(cluster?.isDefault ?? false);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [{ fetching: creating }, create] = useMutation(ClusterCreateDocument);
  const [{ fetching: updating }, update] = useMutation(ClusterUpdateDocument);
  const base = `/p/${project}/studio/clusters`;
  const kubernetes = driver === "KUBERNETES";

  async function submit(event: FormEvent) {
    event.preventDefault();
    const missing: Record<string, string> = {};
    if (!editing && !name.trim()) missing.name = "A name is required";
    resources.forEach((row, index) => {
      if (!row.vendor) missing[`gpuResourceNames.${index}.vendor`] = "Choose a vendor";
      if (!row.resourceName.trim()) missing[`gpuResourceNames.${index}.resourceName`] = "Enter a resource name, like nvidia.com/gpu";
    });
    if (Object.keys(missing).length) {
      setErrors(missing);
      return;
    }
    setErrors({});
    const gpuResourceNames = resources.map((row) => ({ vendor: row.vendor!, resourceName: row.resourceName.trim() }));
    let userErrors: readonly ServerError[];
    let saved: ClusterFieldsFragment | null | undefined;
    if (cluster) {
      const result = await update({
        input: {
          id: cluster.id,
          displayName: displayName.trim(),
          accessAddress: accessAddress.trim(),
          inCluster: kubernetes ? inCluster : null,
          kubeconfig: kubeconfig.trim() ? kubeconfig : removeKubeconfig ? "" : null,
          context: context.trim() || null,
          gpuResourceNames,
          isDefault: isDefault && !cluster.isDefault ? true : null,
        },
      });
      if (result.error || !result.data) {
        setErrors({ "": describeError(result.error) ?? "No answer from the server." });
        return;
      }
      userErrors = result.data.updateCluster.userErrors;
      saved = result.data.updateCluster.cluster;
    } else {
      const result = await create({
        input: {
          name: name.trim(),
          driver,
          displayName: displayName.trim() || null,
          kubeconfig: kubernetes && !inCluster && kubeconfig.trim() ? kubeconfig : null,
          inCluster: kubernetes ? inCluster : null,
          context: kubernetes && context.trim() ? context.trim() : null,
          accessAddress: accessAddress.trim() || null,
          gpuResourceNames,
          isDefault,
        },
      });
      if (result.error || !result.data) {
        setErrors({ "": describeError(result.error) ?? "No answer from the server." });
        return;
      }
      userErrors = result.data.createCluster.userErrors;
      saved = result.data.createCluster.cluster;
    }
    if (userErrors.length || !saved) {
      setErrors(errorsByField(userErrors));
      return;
    }
    notifications.show({
      color: saved.status === "READY" ? "green" : "orange",
      title: `Cluster "${saved.displayName}" saved: ${saved.status === "READY" ? "reachable" : "not reachable"}`,
      message: checkSummary(saved),
    });
    navigate(`${base}/${saved.id}`);
  }

  return (
    <Stack maw={900}>
      <Breadcrumbs>
        <Anchor component={Link} to={base}>
          Clusters
        </Anchor>
        {cluster && (
          <Anchor component={Link} to={`${base}/${cluster.id}`}>
            {cluster.name}
          </Anchor>
        )}
        <Text>{cluster ? "Edit" : "New"}</Text>
      </Breadcrumbs>
      <Title order={2}>{cluster ? `Edit ${cluster.displayName}` : "Add Cluster"}</Title>
      <form onSubmit={submit} noValidate>
        <Stack>
          <Section title="General">
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              <TextInput
                label="Name"
                description={editing ? "The unique name cannot change." : "Unique; lowercase letters, digits and \"-\". Cannot change later."}
                placeholder="gpu-east"
                required={!editing}
                readOnly={editing}
                value={name}
                onChange={(event) => setName(event.currentTarget.value)}
                error={errors.name}
              />
              <TextInput
                label="Display name"
                description="Defaults to the name."
                value={displayName}
                onChange={(event) => setDisplayName(event.currentTarget.value)}
                error={errors.displayName}
              />
            </SimpleGrid>
            <Stack gap={4}>
              <Text size="sm" fw={500} id="cluster-driver-label">
                Driver
              </Text>
              <SegmentedControl
                aria-labelledby="cluster-driver-label"
                value={driver}
                onChange={(value) => setDriver(value as ClusterDriver)}
                disabled={editing}
                data={[
                  { value: "KUBERNETES", label: "Kubernetes" },
                  { value: "SIMULATED", label: "Simulated" },
                ]}
                maw={320}
              />
              <Text size="xs" c="dimmed">
                {editing
                  ? "The driver cannot change: register a new cluster instead."
                  : "Simulated clusters run nothing: they let you try gpupaas without Kubernetes."}
              </Text>
              {errors.driver && (
                <Text size="xs" c="red">
                  {errors.driver}
                </Text>
              )}
            </Stack>
            <Switch
              label="Default cluster"
              description={
                cluster?.isDefault
                  ? "This is the default. To change that, make another cluster the default."
                  : "Profiles without a cluster deploy here. Only one cluster is the default."
              }
              checked={isDefault}
              disabled={cluster?.isDefault}
              onChange={(event) => setIsDefault(event.currentTarget.checked)}
              error={errors.isDefault}
            />
          </Section>

          {kubernetes && (
            <Section title="Connection" description="How gpupaas reaches the cluster's API server.">
              <Switch
                label="In-cluster"
                description="gpupaas runs inside this cluster and uses its own service account (no kubeconfig needed)."
                checked={inCluster}
                onChange={(event) => setInCluster(event.currentTarget.checked)}
                error={errors.inCluster}
              />
              {!inCluster && (
                <>
                  {cluster?.hasKubeconfig && (
                    <Alert icon={<IconLock size={18} />} color="gray">
                      A kubeconfig is stored (encrypted). It is never shown back: paste a new one to replace it.
                    </Alert>
                  )}
                  <Textarea
                    label="Kubeconfig"
                    description="The output of `kubectl config view --raw`. Stored encrypted; write-only."
                    placeholder={cluster?.hasKubeconfig ? "Leave empty to keep the stored kubeconfig" : "apiVersion: v1\nkind: Config\n…"}
                    autosize
                    minRows={4}
                    maxRows={16}
                    styles={{ input: { fontFamily: "var(--mantine-font-family-monospace)" } }}
                    autoComplete="off"
                    spellCheck={false}
                    value={kubeconfig}
                    onChange={(event) => setKubeconfig(event.currentTarget.value)}
                    error={errors.kubeconfig}
                    required={!cluster?.hasKubeconfig}
                  />
                  {cluster?.hasKubeconfig && (
                    <Checkbox
                      label="Remove the stored kubeconfig"
                      checked={removeKubeconfig}
                      disabled={kubeconfig.trim() !== ""}
                      onChange={(event) => setRemoveKubeconfig(event.currentTarget.checked)}
                    />
                  )}
                  <TextInput
                    label="Context"
                    description={
                      editing
                        ? "The kubeconfig context to use. Leave empty to keep the current one (it is not shown back)."
                        : "The kubeconfig context to use; empty: its current-context."
                    }
                    value={context}
                    onChange={(event) => setContext(event.currentTarget.value)}
                    error={errors.context}
                  />
                </>
              )}
              {inCluster && errors.kubeconfig && (
                <Text size="xs" c="red">
                  {errors.kubeconfig}
                </Text>
              )}
            </Section>
          )}

          <Section title="Access">
            <TextInput
              label="Access address"
              description="The host people reach services on (Connect links): a host name, an IP address or an http(s) URL. Without it, services get no Connect links."
              placeholder="gpu.example.com"
              value={accessAddress}
              onChange={(event) => setAccessAddress(event.currentTarget.value)}
              error={errors.accessAddress}
            />
          </Section>

          <Section
            title="GPU resource names"
            description="The extended resource each vendor's GPUs are requested as. Vendors without a row use the defaults (nvidia.com/gpu, amd.com/gpu, gpu.intel.com/i915, huawei.com/Ascend910)."
          >
            {resources.map((row, index) => (
              <Group key={index} align="flex-start" gap="xs" wrap="nowrap">
                <Select
                  aria-label={`GPU resource ${index + 1} vendor`}
                  placeholder="Vendor"
                  data={GPU_VENDORS}
                  value={row.vendor}
                  allowDeselect={false}
                  onChange={(value) =>
                    setResources(resources.map((r, i) => (i === index ? { ...r, vendor: value as Vendor } : r)))
                  }
                  error={errors[`gpuResourceNames.${index}.vendor`]}
                  w={150}
                />
                <TextInput
                  aria-label={`GPU resource ${index + 1} name`}
                  placeholder={row.vendor ? DEFAULT_RESOURCES[row.vendor] : "nvidia.com/gpu"}
                  value={row.resourceName}
                  styles={{ input: { fontFamily: "var(--mantine-font-family-monospace)" } }}
                  onChange={(event) => {
                    const value = event.currentTarget.value;
                    setResources(resources.map((r, i) => (i === index ? { ...r, resourceName: value } : r)));
                  }}
                  error={errors[`gpuResourceNames.${index}.resourceName`] ?? errors[`gpuResourceNames.${index}`]}
                  style={{ flex: 1 }}
                />
                <ActionIcon
                  variant="subtle"
                  color="red"
                  mt={4}
                  aria-label={`Remove GPU resource ${index + 1}`}
                  onClick={() => setResources(resources.filter((_, i) => i !== index))}
                >
                  <IconTrash size={16} />
                </ActionIcon>
              </Group>
            ))}
            {errors.gpuResourceNames && (
              <Text size="xs" c="red">
                {errors.gpuResourceNames}
              </Text>
            )}
            <Group>
              <Button
                size="xs"
                variant="light"
                leftSection={<IconPlus size={14} />}
                onClick={() => setResources([...resources, { vendor: null, resourceName: "" }])}
              >
                Add GPU resource name
              </Button>
            </Group>
          </Section>

          <FormErrors title="Not saved" errors={errors} placed={PLACED} />
          <Text size="xs" c="dimmed">
            Saving checks the cluster at once: reachable, version, nodes and their GPUs.
          </Text>
          <Group justify="flex-end">
            <Button variant="default" component={Link} to={cluster ? `${base}/${cluster.id}` : base}>
              Cancel
            </Button>
            <Button type="submit" loading={creating || updating}>
              {editing ? "Save Changes" : "Save"}
            </Button>
          </Group>
        </Stack>
      </form>
    </Stack>
  );
}

export function ClusterNewPage() {
  return <ClusterForm cluster={null} />;
}

export function ClusterEditPage() {
  const { id = "" } = useParams();
  const [{ data, error }, refetch] = useQuery({ query: ClusterDetailDocument, variables: { id }, requestPolicy: "network-only" });
  if (error && !data) {
    return (
      <ErrorState
        message={describeError(error) ?? "Could not load the cluster."}
        onRetry={() => refetch({ requestPolicy: "network-only" })}
      />
    );
  }
  if (!data) return <Loading label="Loading the cluster" />;
  if (!data.cluster) return <ErrorState message="No such cluster: it may have been deleted." />;
  return <ClusterForm key={data.cluster.id} cluster={data.cluster} />;
}
