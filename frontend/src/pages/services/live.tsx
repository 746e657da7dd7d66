/* What every service page shares: the live status (with what may be done now), the Connect
 * links and the Start / Stop / Restart / Delete controls. */
import { ActionIcon, Button, Code, CopyButton, Group, Modal, Stack, Text, Tooltip } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import {
  IconCheck,
  IconCopy,
  IconExternalLink,
  IconPlayerPlay,
  IconPlayerStop,
  IconRefresh,
  IconTerminal2,
  IconTrash,
} from "@tabler/icons-react";
import { useState, type ReactNode } from "react";
import { useMutation, useSubscription } from "urql";

import { whyNot } from "../../components/actions";
import { describeError } from "../../components/errors";
import type { ServiceInstanceActionName, ServiceStatus } from "../../gql/graphql";
import {
  ServiceDeleteDocument,
  ServiceRestartDocument,
  ServiceStartDocument,
  ServiceStatusLiveDocument,
  ServiceStopDocument,
} from "./queries";

export type ServiceAction = ServiceInstanceActionName;
type ServiceActions = readonly { name: ServiceAction; allowed: boolean; reason?: string | null }[];

export interface ConnectLinkValue {
  port: string;
  url: string;
}

export interface LiveState {
  status: ServiceStatus;
  statusMessage: string | null;
  connect: readonly ConnectLinkValue[];
  /** What the caller may do with it now, as the API says. */
  actions: ServiceActions;
}

/** The service's status as the `serviceInstanceStatus` subscription tells it, or as loaded when the
 * loaded one is newer (after a refetch). */
export function useLiveService(
  id: string,
  loaded: LiveState & { updatedAt: string },
): LiveState & { live: boolean } {
  const [{ data }] = useSubscription({ query: ServiceStatusLiveDocument, variables: { id } });
  const event = data?.serviceInstanceStatus;
  if (event && event.instance.id === id && new Date(event.at).getTime() >= new Date(loaded.updatedAt).getTime()) {
    return { status: event.status, statusMessage: event.message ?? null, connect: event.instance.connect, actions: event.instance.actions, live: true };
  }
  return { status: loaded.status, statusMessage: loaded.statusMessage, connect: loaded.connect, actions: loaded.actions, live: Boolean(event) };
}

export function isSsh(link: ConnectLinkValue): boolean {
  return link.url.startsWith("ssh ");
}

/** Web links open in a new tab (labelled with the port's name); ssh links are a command to copy. */
export function ConnectLinks({
  links,
  status,
  size = "xs",
  empty,
}: {
  links: readonly ConnectLinkValue[];
  status: ServiceStatus;
  size?: "xs" | "sm";
  empty?: ReactNode;
}) {
  // A stopped service has no link (the API gives none either): nothing answers there.
  const stopped = status === "STOPPED" || status === "STOPPING" || status === "DELETING";
  if (links.length === 0 || stopped) {
    return (
      <Text size="xs" c="dimmed" data-testid={stopped ? "connect-stopped" : undefined}>
        {stopped ? "Stopped: start it to connect" : (empty ?? (status === "RUNNING" ? "No web or ssh port" : "Once running"))}
      </Text>
    );
  }
  if (status !== "RUNNING") {
    // The links are kept (the same token after a start), but nothing answers until it runs.
    return (
      <Tooltip label="Nothing answers until the service is running: start it to connect." withArrow>
        <Group gap={4} wrap="wrap" data-testid="connect-waiting">
          {links.map((link) => (
            <Button key={link.port} size={size} variant="default" disabled tt="uppercase" aria-label={`Connect to ${link.port} (available once running)`}>
              {link.port}
            </Button>
          ))}
        </Group>
      </Tooltip>
    );
  }
  return (
    <Stack gap={4} align="flex-start">
      {links.map((link) =>
        isSsh(link) ? (
          <Group key={link.port} gap={4} wrap="nowrap">
            <IconTerminal2 size={14} aria-hidden />
            <Code style={{ whiteSpace: "nowrap" }} aria-label={`${link.port} ssh command`}>
              {link.url}
            </Code>
            <CopyButton value={link.url} timeout={1500}>
              {({ copied, copy }) => (
                <Tooltip label={copied ? "Copied" : "Copy the ssh command"} withArrow>
                  <ActionIcon
                    variant="subtle"
                    color={copied ? "teal" : "gray"}
                    size="sm"
                    onClick={copy}
                    aria-label={`Copy ssh command for ${link.port}`}
                  >
                    {copied ? <IconCheck size={14} /> : <IconCopy size={14} />}
                  </ActionIcon>
                </Tooltip>
              )}
            </CopyButton>
          </Group>
        ) : (
          <Button
            key={link.port}
            component="a"
            href={link.url}
            target="_blank"
            rel="noopener noreferrer"
            size={size}
            variant="light"
            rightSection={<IconExternalLink size={12} />}
            aria-label={`Connect to ${link.port} (opens in a new tab)`}
            tt="uppercase"
          >
            {link.port}
          </Button>
        ),
      )}
    </Stack>
  );
}

const ICONS: Record<ServiceAction, ReactNode> = {
  START: <IconPlayerPlay size={16} />,
  STOP: <IconPlayerStop size={16} />,
  RESTART: <IconRefresh size={16} />,
  DELETE: <IconTrash size={16} />,
};
const LABELS: Record<ServiceAction, string> = { START: "Start", STOP: "Stop", RESTART: "Restart", DELETE: "Delete" };
const VERBS: Record<ServiceAction, string> = { START: "start", STOP: "stop", RESTART: "restart", DELETE: "delete" };

/** Start, Stop, Restart and Delete (asks first), each possible when the API says it is, with a
 * tooltip giving the API's reason when not. Problems show as notifications. */
export function ServiceActions({
  service,
  actions,
  variant,
  onChanged,
  onDeleted,
}: {
  service: { id: string; name: string; displayName: string };
  actions: ServiceActions;
  variant: "icons" | "buttons";
  onChanged: () => void;
  onDeleted: () => void;
}) {
  const [{ fetching: starting }, start] = useMutation(ServiceStartDocument);
  const [{ fetching: stopping }, stop] = useMutation(ServiceStopDocument);
  const [{ fetching: restarting }, restart] = useMutation(ServiceRestartDocument);
  const [{ fetching: deleting }, remove] = useMutation(ServiceDeleteDocument);
  const [confirming, setConfirming] = useState(false);
  const busy: Record<ServiceAction, boolean> = { START: starting, STOP: stopping, RESTART: restarting, DELETE: deleting };
  const label = service.displayName || service.name;

  function report(
    action: ServiceAction,
    result: { error?: Parameters<typeof describeError>[0]; userErrors?: readonly { message: string }[] },
  ): boolean {
    const problem = result.error
      ? describeError(result.error)
      : result.userErrors?.length
        ? result.userErrors.map((e) => e.message).join("; ")
        : null;
    if (problem) {
      notifications.show({ color: "red", title: `Could not ${VERBS[action]} "${label}"`, message: problem });
      return false;
    }
    return true;
  }

  async function answer(action: Exclude<ServiceAction, "DELETE">) {
    const variables = { id: service.id };
    if (action === "START") {
      const result = await start(variables);
      return { error: result.error, payload: result.data?.startServiceInstance };
    }
    if (action === "STOP") {
      const result = await stop(variables);
      return { error: result.error, payload: result.data?.stopServiceInstance };
    }
    const result = await restart(variables);
    return { error: result.error, payload: result.data?.restartServiceInstance };
  }

  async function run(action: ServiceAction) {
    if (action === "DELETE") {
      setConfirming(true);
      return;
    }
    const { error, payload } = await answer(action);
    const ok = report(action, {
      error: error ?? (payload ? undefined : { message: "No answer from the server." }),
      userErrors: payload?.userErrors,
    });
    if (ok) {
      notifications.show({ color: "blue", message: `${LABELS[action]} of "${label}" requested.` });
      onChanged();
    }
  }

  async function confirmDelete() {
    const result = await remove({ id: service.id });
    const payload = result.data?.deleteServiceInstance;
    setConfirming(false);
    if (report("DELETE", { error: result.error ?? (payload ? undefined : { message: "No answer from the server." }), userErrors: payload?.userErrors })) {
      notifications.show({ color: "blue", message: `"${label}" is being deleted.` });
      onDeleted();
    }
  }

  const offered: ServiceAction[] = ["START", "STOP", "RESTART", "DELETE"];
  return (
    <>
      <Group gap={variant === "icons" ? 2 : "xs"} wrap="nowrap">
        {offered.map((action) => {
          const reason = whyNot(actions, action);
          const disabled = reason !== null;
          const tip = reason ?? LABELS[action];
          const common = {
            "aria-label": `${LABELS[action]} ${label}`,
            "aria-disabled": disabled || undefined,
            "data-disabled": disabled || undefined,
            color: action === "DELETE" ? "red" : undefined,
            loading: busy[action],
            onClick: () => {
              if (!disabled) void run(action);
            },
          };
          return (
            <Tooltip key={action} label={tip} withArrow multiline maw={260} events={{ hover: true, focus: true, touch: true }}>
              {variant === "icons" ? (
                <ActionIcon variant="subtle" {...common} color={common.color ?? "gray"}>
                  {ICONS[action]}
                </ActionIcon>
              ) : (
                <Button variant={action === "DELETE" ? "subtle" : "light"} size="sm" leftSection={ICONS[action]} {...common}>
                  {LABELS[action]}
                </Button>
              )}
            </Tooltip>
          );
        })}
      </Group>
      <Modal opened={confirming} onClose={() => setConfirming(false)} title="Delete service instance" centered>
        <Text size="sm" mb="lg">
          Delete &quot;{label}&quot;? Its pod, its Service and its workspace (everything under the mount path) are
          deleted. This cannot be undone.
        </Text>
        <Group justify="flex-end">
          <Button variant="default" onClick={() => setConfirming(false)}>
            Cancel
          </Button>
          <Button color="red" loading={deleting} onClick={() => void confirmDelete()}>
            Delete
          </Button>
        </Group>
      </Modal>
    </>
  );
}
