import { Alert, Anchor, Breadcrumbs, Button, Grid, Group, SimpleGrid, Stack, Text, Title } from "@mantine/core";
import { IconEdit, IconEye, IconPlayerPlay, IconRefreshAlert, IconShare, IconTrash, IconWreckingBall } from "@tabler/icons-react";
import { useState } from "react";
import { Link, useNavigate, useParams } from "react-router-dom";
import { useQuery, useSubscription } from "urql";

import { useProject } from "../../app/project";
import { whyNot } from "../../components/actions";
import { AutoStopPanel } from "../../components/AutoStop";
import { ClusterEventsPanel } from "../../components/ClusterEvents";
import { describeError } from "../../components/errors";
import { SharingModal } from "../../components/SharingModal";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import { StatusBadge } from "../../components/StatusBadge";
import { Panel } from "../../components/Section";
import { ResourceGrid } from "../catalog/resources";
import { DeleteInstanceModal, DestroyInstanceModal, ReasonButton, useInstanceActions, type InstanceRef } from "./actions";
import { Runs, Services, StatusUpdates } from "./InstanceActivity";
import { DetailsSection, Pairs } from "./InstanceDetails";
import { NamespaceUsagePanel } from "./NamespaceUsage";
import { useSettleDeploying } from "./deployToast";
import { InstanceOverviewDocument, InstanceStatusLiveDocument, newest, reduceLive, type Instance } from "./overview";

type Working = "deploy" | "destroy" | null;

/** Edit, Deploy, Destroy, Manage Sharing and Delete, each as the API says the caller may now. */
function InstanceActionBar({
  instance,
  base,
  working,
  onDeploy,
  onDestroy,
  onShare,
  onDelete,
}: {
  instance: Instance;
  base: string;
  working: Working;
  onDeploy: () => void;
  onDestroy: () => void;
  onShare: () => void;
  onDelete: () => void;
}) {
  const { actions } = instance;
  return (
    <Group gap="xs" wrap="wrap">
      <ReasonButton variant="default" leftSection={<IconEdit size={16} />} reason={whyNot(actions, "UPDATE")} to={`${base}/instances/${instance.id}/edit`}>
        Edit Configuration
      </ReasonButton>
      <ReasonButton leftSection={<IconPlayerPlay size={16} />} reason={whyNot(actions, "DEPLOY")} loading={working === "deploy"} onClick={onDeploy}>
        Deploy
      </ReasonButton>
      <ReasonButton
        variant="light"
        color="orange"
        leftSection={<IconWreckingBall size={16} />}
        reason={whyNot(actions, "DESTROY")}
        loading={working === "destroy"}
        onClick={onDestroy}
      >
        Destroy
      </ReasonButton>
      <ReasonButton variant="default" leftSection={<IconShare size={16} />} reason={whyNot(actions, "SHARE")} onClick={onShare}>
        Manage Sharing
      </ReasonButton>
      <ReasonButton variant="light" color="red" leftSection={<IconTrash size={16} />} reason={whyNot(actions, "DELETE")} onClick={onDelete}>
        Delete
      </ReasonButton>
    </Group>
  );
}

/** One compute instance: its live status, configuration, outputs, runs and services. */
export function InstancePage() {
  const { project } = useProject();
  const { id = "" } = useParams();
  const navigate = useNavigate();
  const base = `/p/${project}`;
  const [{ data, error }, refetch] = useQuery({ query: InstanceOverviewDocument, variables: { id }, requestPolicy: "cache-and-network" });
  const [{ data: live }] = useSubscription({ query: InstanceStatusLiveDocument, variables: { id }, pause: !id }, reduceLive);
  const actions = useInstanceActions();
  const [working, setWorking] = useState<Working>(null);
  const [confirmDestroy, setConfirmDestroy] = useState(false);
  const [deleting, setDeleting] = useState<InstanceRef | null>(null);
  const [sharing, setSharing] = useState(false);
  const latest = live?.latest;
  useSettleDeploying(latest ? { id: latest.instance.id, status: latest.status, message: latest.message ?? null, name: latest.instance.displayName } : null);

  if (error && !data) {
    return <ErrorState message={describeError(error) ?? "The compute instance could not be loaded."} onRetry={() => refetch({ requestPolicy: "network-only" })} />;
  }
  if (!data) return <Loading label="Loading the compute instance" />;
  if (!data.computeInstance) {
    return (
      <EmptyState title="This compute instance does not exist" action={<Button component={Link} to={`${base}/instances`}>Back to Compute Instances</Button>}>
        It may have been deleted, or it is no longer shared with this project.
      </EmptyState>
    );
  }

  // The newest of what the query and the live events tell (what may be done with it included).
  const { instance, status, message } = newest(data.computeInstance, live);
  const sharedWithUs = instance.project.name !== project;
  const ref: InstanceRef = { id: instance.id, name: instance.name, displayName: instance.displayName, status };
  const reload = () => refetch({ requestPolicy: "network-only" });

  const run = async (kind: "deploy" | "destroy") => {
    setWorking(kind);
    await (kind === "deploy" ? actions.deploy(ref) : actions.destroy(ref));
    setWorking(null);
    setConfirmDestroy(false);
    reload();
  };

  return (
    <Stack gap="md">
      <Breadcrumbs>
        <Anchor component={Link} to={`${base}/instances`}>
          Compute Instances
        </Anchor>
        <Text>{instance.displayName}</Text>
      </Breadcrumbs>

      <Group justify="space-between" align="flex-start" wrap="wrap" gap="md">
        <Stack gap={4} style={{ minWidth: 0 }}>
          <Group gap="sm" wrap="wrap">
            <Title order={2}>{instance.displayName}</Title>
            <span data-testid="instance-status">
              <StatusBadge status={status} />
            </span>
          </Group>
          <Text size="sm" c="dimmed" ff="monospace">
            {instance.name}
          </Text>
          {message && (
            <Text size="sm" c={status === "FAILED" ? "red" : "dimmed"} data-testid="instance-status-message">
              {message}
            </Text>
          )}
          {instance.description && <Text size="sm">{instance.description}</Text>}
        </Stack>
        <InstanceActionBar
          instance={instance}
          base={base}
          working={working}
          onDeploy={() => void run("deploy")}
          onDestroy={() => setConfirmDestroy(true)}
          onShare={() => setSharing(true)}
          onDelete={() => setDeleting(ref)}
        />
      </Group>

      {sharedWithUs && (
        <Alert color="gray" icon={<IconEye size={18} />} title="Shared with this project">
          Project “{instance.project.displayName || instance.project.name}” shares this instance with you read-only.
        </Alert>
      )}
      {instance.outdated && (
        <Alert color="yellow" icon={<IconRefreshAlert size={18} />} title="The compute profile changed" data-testid="outdated-notice">
          Profile “{instance.profile?.displayName ?? instance.profileName}” was changed after this instance was launched. The instance keeps
          the configuration it was launched with (its snapshot of the profile); launch a new instance to get the profile as it is now.
        </Alert>
      )}

      <Grid gap="md">
        <Grid.Col span={{ base: 12, md: 7 }} order={{ base: 2, md: 1 }}>
          <Stack gap="md">
            <DetailsSection instance={instance} base={base} />
            <Panel title="Resources">
              <ResourceGrid resources={instance.resources} />
            </Panel>
            {status === "SUCCESS" && <NamespaceUsagePanel instanceId={instance.id} base={base} />}
          </Stack>
        </Grid.Col>
        <Grid.Col span={{ base: 12, md: 5 }} order={{ base: 1, md: 2 }}>
          <Stack gap="md">
            <StatusUpdates status={status} history={live?.history ?? []} />
            <AutoStopPanel kind="compute" id={instance.id} status={status} />
            <Panel title="Outputs">
              <Pairs pairs={instance.outputs} label="Outputs" copy empty={status === "SUCCESS" ? "The template declares no visible output." : "Outputs appear once the instance is deployed."} />
            </Panel>
          </Stack>
        </Grid.Col>
      </Grid>

      <SimpleGrid cols={{ base: 1, lg: 3 }} spacing="md">
        <Panel title="Inputs">
          <Pairs pairs={instance.inputs} label="Inputs" empty="No inputs." />
        </Panel>
        <Panel title="Labels">
          <Pairs pairs={instance.labels} label="Labels" empty="No labels." />
        </Panel>
        <Panel title="Annotations">
          <Pairs pairs={instance.annotations} label="Annotations" empty="No annotations." />
        </Panel>
      </SimpleGrid>

      <Services instance={instance} project={project} status={status} readOnly={sharedWithUs} />

      <ClusterEventsPanel kind="compute" id={instance.id} />

      <Panel title="Runs" action={<Text size="xs" c="dimmed">Newest first</Text>}>
        <Runs runs={instance.runs} />
      </Panel>

      <DestroyInstanceModal instance={confirmDestroy ? ref : null} busy={working === "destroy"} onClose={() => setConfirmDestroy(false)} onConfirm={() => run("destroy")} />
      <DeleteInstanceModal
        instance={deleting}
        onClose={() => setDeleting(null)}
        onDeleted={() => {
          setDeleting(null);
          navigate(`${base}/instances`);
        }}
      />
      <SharingModal
        kind="instance"
        target={sharing ? { id: instance.id, name: instance.name, displayName: instance.displayName, project: instance.project.name, sharing: instance.sharing } : null}
        onClose={() => setSharing(false)}
        onSaved={reload}
      />
    </Stack>
  );
}
