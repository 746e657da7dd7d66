import {
  Anchor,
  Badge,
  Breadcrumbs,
  Button,
  Card,
  Code,
  Group,
  SimpleGrid,
  Stack,
  Table,
  Text,
  Title,
} from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { IconPencil, IconShare, IconTrash } from "@tabler/icons-react";
import { useState, type ReactNode } from "react";
import { Link, useNavigate, useParams } from "react-router-dom";
import { useMutation, useQuery } from "urql";

import { useProject } from "../../app/project";
import { describeError } from "../../components/errors";
import { SharingModal } from "../../components/SharingModal";
import { ErrorState, Loading } from "../../components/states";
import { Panel } from "../../components/Section";
import { statusLabel } from "../../components/StatusBadge";
import { ConfirmDeleteModal } from "./ConfirmDeleteModal";
import { allocationLabel, formatDate, gpuSummary, OVERRIDE_LABELS, SharingSummary } from "./common";
import { ProfileDeleteDocument, ProfileDetailDocument } from "./operations";
import { ProfileIcon } from "./ProfileIcon";
import { ReadmeHtml } from "./ReadmeHtml";

function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div>
      <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
        {label}
      </Text>
      <div>{typeof children === "string" ? <Text size="sm">{children}</Text> : children}</div>
    </div>
  );
}

function Pairs({ pairs, empty }: { pairs: readonly { key: string; value: string }[]; empty: string }) {
  if (pairs.length === 0) {
    return (
      <Text size="sm" c="dimmed">
        {empty}
      </Text>
    );
  }
  return (
    <Group gap={6}>
      {pairs.map(({ key, value }) => (
        <Badge key={key} variant="default" tt="none" fw={400} style={{ maxWidth: "100%" }}>
          {key}={value}
        </Badge>
      ))}
    </Group>
  );
}

/** Studio > Compute Profiles > a profile: everything that was configured. */
export function ProfileDetailPage() {
  const { project } = useProject();
  const { id = "" } = useParams();
  const navigate = useNavigate();
  const [{ data, fetching, error }, reexecute] = useQuery({ query: ProfileDetailDocument, variables: { id } });
  const [sharingOpen, setSharingOpen] = useState(false);
  const [deleteOpen, setDeleteOpen] = useState(false);
  const [, deleteProfile] = useMutation(ProfileDeleteDocument);
  const base = `/p/${project}/studio/profiles`;
  const refresh = () => reexecute({ requestPolicy: "network-only" });

  const crumbs = (name?: string) => (
    <Breadcrumbs>
      <Anchor component={Link} to={base}>
        Compute Profiles
      </Anchor>
      {name && <Text>{name}</Text>}
    </Breadcrumbs>
  );

  if (fetching && !data) return <Loading label="Loading the compute profile" />;
  if (error && !data) {
    return (
      <Stack>
        {crumbs()}
        <ErrorState message={describeError(error) ?? "Could not load the compute profile."} onRetry={refresh} />
      </Stack>
    );
  }
  const profile = data?.computeProfile;
  if (!profile) {
    return (
      <Stack>
        {crumbs()}
        <ErrorState message="This compute profile does not exist (it may have been deleted), or you may not see it." />
      </Stack>
    );
  }

  const version = profile.environmentTemplateVersion;
  const definitions = new Map(version.inputs.map((d) => [d.name, d]));
  const outputDescriptions = new Map(version.outputs.map((o) => [o.name, o.description]));
  const r = profile.resources;

  return (
    <Stack>
      {crumbs(profile.name)}
      <Group justify="space-between" align="flex-start">
        <Group align="flex-start" wrap="nowrap">
          <ProfileIcon url={profile.iconUrl} name={profile.displayName} size={56} />
          <div>
            <Title order={2}>{profile.displayName}</Title>
            <Text c="dimmed" size="sm" ff="monospace">
              {profile.name}
            </Text>
          </div>
        </Group>
        <Group gap="sm">
          <Button component={Link} to={`${base}/${profile.id}/edit`} leftSection={<IconPencil size={16} />}>
            Edit
          </Button>
          <Button variant="default" leftSection={<IconShare size={16} />} onClick={() => setSharingOpen(true)}>
            Manage Sharing
          </Button>
          <Button variant="light" color="red" leftSection={<IconTrash size={16} />} onClick={() => setDeleteOpen(true)}>
            Delete
          </Button>
        </Group>
      </Group>
      {profile.description && <Text>{profile.description}</Text>}

      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <Panel title="General">
          <SimpleGrid cols={{ base: 1, sm: 2 }} spacing="md">
            <Field label="Unique Name">{profile.name}</Field>
            <Field label="Display Name">{profile.displayName}</Field>
            <Field label="Allocation Type">{allocationLabel(profile.allocationType)}</Field>
            <Field label="Cluster">{profile.cluster ? profile.cluster.displayName || profile.cluster.name : "Default cluster"}</Field>
            <Field label="Environment Template">
              <Group gap={6}>
                <Anchor component={Link} to={`/p/${project}/studio/templates/${profile.environmentTemplate.id}`} size="sm">
                  {profile.environmentTemplate.displayName}
                </Anchor>
                {profile.environmentTemplate.builtIn && (
                  <Badge size="xs" variant="light">
                    Built-in
                  </Badge>
                )}
              </Group>
            </Field>
            <Field label="Template Version">
              <Group gap={6}>
                <Text size="sm">{version.version}</Text>
                <Badge size="xs" variant="light" color={version.state === "ACTIVE" ? "green" : version.state === "DRAFT" ? "gray" : "red"}>
                  {statusLabel(version.state)}
                </Badge>
              </Group>
            </Field>
            <Field label="Created">{formatDate(profile.createdAt)}</Field>
            <Field label="Updated">{formatDate(profile.updatedAt)}</Field>
          </SimpleGrid>
        </Panel>
        <Panel title="Resources">
          <SimpleGrid cols={{ base: 2, sm: 3 }} spacing="md">
            <Field label="CPU">{r.cpu}</Field>
            <Field label="Memory">{r.memory}</Field>
            <Field label="Storage">{r.storage}</Field>
            <Field label="GPUs">{gpuSummary(r)}</Field>
            <Field label="GPU Vendor">{r.gpuVendor}</Field>
            <Field label="GPU Model">{r.gpuModel || "Any"}</Field>
          </SimpleGrid>
        </Panel>
        <Panel title="Labels and Annotations">
          <Stack gap="sm">
            <Field label="Labels">
              <Pairs pairs={profile.labels} empty="No labels" />
            </Field>
            <Field label="Annotations">
              <Pairs pairs={profile.annotations} empty="No annotations" />
            </Field>
          </Stack>
        </Panel>
        <Panel
          title="Sharing"
          action={
            <Button size="xs" variant="subtle" onClick={() => setSharingOpen(true)}>
              Manage Sharing
            </Button>
          }
        >
          <SharingSummary sharing={profile.sharing} />
        </Panel>
      </SimpleGrid>

      <Panel title="End User Configuration">
        <Stack>
          <Group align="center">
            <ProfileIcon url={profile.iconUrl} name={profile.displayName} />
            <Field label="Icon URL">
              {profile.iconUrl ? (
                <Code style={{ wordBreak: "break-all" }}>{profile.iconUrl}</Code>
              ) : (
                <Text size="sm" c="dimmed">
                  None: users see the default icon
                </Text>
              )}
            </Field>
          </Group>
          <Field label="Readme">
            {profile.readmeHtml ? (
              <Card withBorder radius="md" mt={4}>
                <ReadmeHtml html={profile.readmeHtml} />
              </Card>
            ) : (
              <Text size="sm" c="dimmed">
                No readme
              </Text>
            )}
          </Field>
        </Stack>
      </Panel>

      <Panel title="Input Settings">
        {profile.inputSettings.length === 0 ? (
          <Text size="sm" c="dimmed">
            The template version declares no inputs.
          </Text>
        ) : (
          <Table.ScrollContainer minWidth={700}>
            <Table verticalSpacing="xs">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Input</Table.Th>
                  <Table.Th>Value</Table.Th>
                  <Table.Th>Required</Table.Th>
                  <Table.Th>Override</Table.Th>
                  <Table.Th>Allowed values</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {profile.inputSettings.map((s) => {
                  const defn = definitions.get(s.name);
                  return (
                    <Table.Tr key={s.name}>
                      <Table.Td>
                        <Text size="sm" ff="monospace">
                          {s.name}
                        </Text>
                        {defn?.description && (
                          <Text size="xs" c="dimmed">
                            {defn.description}
                          </Text>
                        )}
                      </Table.Td>
                      <Table.Td>
                        {s.value == null || s.value === "" ? (
                          <Text size="sm" c="dimmed">
                            Not set
                          </Text>
                        ) : defn?.sensitive ? (
                          <Text size="sm">••••••</Text>
                        ) : (
                          <Code>{s.value}</Code>
                        )}
                      </Table.Td>
                      <Table.Td>{s.required ? "Yes" : "No"}</Table.Td>
                      <Table.Td>{OVERRIDE_LABELS[s.override] ?? s.override}</Table.Td>
                      <Table.Td>{s.override === "RESTRICTED" ? s.allowedValues.join(", ") : "—"}</Table.Td>
                    </Table.Tr>
                  );
                })}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </Panel>

      <Panel title="Output Settings">
        {profile.outputSettings.length === 0 ? (
          <Text size="sm" c="dimmed">
            The template version declares no outputs.
          </Text>
        ) : (
          <Table.ScrollContainer minWidth={500}>
            <Table verticalSpacing="xs">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Output</Table.Th>
                  <Table.Th>Shown to users</Table.Th>
                  <Table.Th>Display name</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {profile.outputSettings.map((s) => (
                  <Table.Tr key={s.name}>
                    <Table.Td>
                      <Text size="sm" ff="monospace">
                        {s.name}
                      </Text>
                      {outputDescriptions.get(s.name) && (
                        <Text size="xs" c="dimmed">
                          {outputDescriptions.get(s.name)}
                        </Text>
                      )}
                    </Table.Td>
                    <Table.Td>
                      <Badge variant="light" color={s.visible ? "green" : "gray"}>
                        {s.visible ? "Visible" : "Hidden"}
                      </Badge>
                    </Table.Td>
                    <Table.Td>{s.displayName || <Text size="sm" c="dimmed">{s.name}</Text>}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </Panel>

      <SharingModal
        kind="profile"
        target={sharingOpen ? { ...profile, project: profile.project.name } : null}
        onClose={() => setSharingOpen(false)}
        onSaved={refresh}
      />
      <ConfirmDeleteModal
        opened={deleteOpen}
        title="Delete compute profile"
        message={
          <>
            Delete the compute profile <b>{profile.displayName}</b> ({profile.name})? It is no longer available to end
            users; compute instances already launched from it are not affected.
          </>
        }
        onClose={() => setDeleteOpen(false)}
        onConfirm={async () => {
          const result = await deleteProfile({ id: profile.id });
          const payload = result.data?.deleteComputeProfile;
          if (result.error || !payload) return [describeError(result.error) ?? "Could not delete the compute profile."];
          if (payload.userErrors.length > 0) return payload.userErrors.map((e) => e.message);
          notifications.show({ color: "green", message: `Compute profile "${profile.name}" deleted.` });
          navigate(base);
          return [];
        }}
      />
    </Stack>
  );
}
