/* What every service page shares: the actions' rules, the live status, the Connect links and
 * the Start / Stop / Restart / Delete controls. */
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

import { describeError } from "../../components/errors";
import { statusLabel } from "../../components/StatusBadge";
import type { ServiceStatus } from "../../gql/graphql";
import {
  ServiceDeleteDocument,
  ServiceRestartDocument,
  ServiceStartDocument,
  ServiceStatusLiveDocument,
  ServiceStopDocument,
} from "./queries";

export type ServiceAction = "start" | "stop" | "restart" | "delete";

const ALLOWED: Record<ServiceAction, readonly ServiceStatus[]> = {
  start: ["STOPPED", "FAILED"],
  stop: ["RUNNING", "FAILED"],
  restart: ["RUNNING"],
  delete: ["PENDING", "STARTING", "RUNNING", "STOPPING", "STOPPED", "FAILED"],
};
const BUSY: readonly ServiceStatus[] = ["PENDING", "STARTING", "STOPPING"];

/** Why `action` is not possible in `status` (null: it is). */
export function whyNot(action: ServiceAction, status: ServiceStatus): string | null {
  if (ALLOWED[action].includes(status)) return null;
  if (status === "DELETING") return "It is being deleted.";
  if (BUSY.includes(status)) return `It is ${statusLabel(status).toLowerCase()}: wait until this step finishes.`;
  if (action === "start") return "It is already running.";
  if (action === "stop") return "It is not running.";
  if (action === "restart") return `Only a running service can be restarted (it is ${statusLabel(status).toLowerCase()}): start it instead.`;
  return `Not possible while it is ${statusLabel(status).toLowerCase()}.`;
}

export interface ConnectLinkValue {
  port: string;
  url: string;
}

export interface LiveState {
  status: ServiceStatus;
  statusMessage: string | null;
  connect: readonly ConnectLinkValue[];
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
    return { status: event.status, statusMessage: event.message ?? null, connect: event.instance.connect, live: true };
  }
  return { status: loaded.status, statusMessage: loaded.statusMessage, connect: loaded.connect, live: Boolean(event) };
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
  if (links.length === 0) {
    return (
      <Text size="xs" c="dimmed">
        {empty ?? (status === "RUNNING" ? "No web or ssh port" : "Once running")}
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
  start: <IconPlayerPlay size={16} />,
  stop: <IconPlayerStop size={16} />,
  restart: <IconRefresh size={16} />,
  delete: <IconTrash size={16} />,
};
const LABELS: Record<ServiceAction, string> = { start: "Start", stop: "Stop", restart: "Restart", delete: "Delete" };

/** Start, Stop, Restart and Delete (asks first), each possible only in the statuses that allow it,
 * with a tooltip saying why not. Problems show as notifications. */
export function ServiceActions({
  service,
  status,
  variant,
  onChanged,
  onDeleted,
}: {
  service: { id: string; name: string; displayName: string };
  status: ServiceStatus;
  variant: "icons" | "buttons";
  onChanged: () => void;
  onDeleted: () => void;
}) {
  const [{ fetching: starting }, start] = useMutation(ServiceStartDocument);
  const [{ fetching: stopping }, stop] = useMutation(ServiceStopDocument);
  const [{ fetching: restarting }, restart] = useMutation(ServiceRestartDocument);
  const [{ fetching: deleting }, remove] = useMutation(ServiceDeleteDocument);
  const [confirming, setConfirming] = useState(false);
  const busy: Record<ServiceAction, boolean> = { start: starting, stop: stopping, restart: restarting, delete: deleting };
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
      notifications.show({ color: "red", title: `Could not ${action} "${label}"`, message: problem });
      return false;
    }
    return true;
  }

  async function answer(action: Exclude<ServiceAction, "delete">) {
    const variables = { id: service.id };
    if (action === "start") {
      const result = await start(variables);
      return { error: result.error, payload: result.data?.startServiceInstance };
    }
    if (action === "stop") {
      const result = await stop(variables);
      return { error: result.error, payload: result.data?.stopServiceInstance };
    }
    const result = await restart(variables);
    return { error: result.error, payload: result.data?.restartServiceInstance };
  }

  async function run(action: ServiceAction) {
    if (action === "delete") {
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
    if (report("delete", { error: result.error ?? (payload ? undefined : { message: "No answer from the server." }), userErrors: payload?.userErrors })) {
      notifications.show({ color: "blue", message: `"${label}" is being deleted.` });
      onDeleted();
    }
  }

  const actions: ServiceAction[] = ["start", "stop", "restart", "delete"];
  return (
    <>
      <Group gap={variant === "icons" ? 2 : "xs"} wrap="nowrap">
        {actions.map((action) => {
          const reason = whyNot(action, status);
          const disabled = reason !== null;
          const tip = disabled ? `Cannot ${action}: ${reason}` : LABELS[action];
          const common = {
            "aria-label": `${LABELS[action]} ${label}`,
            "aria-disabled": disabled || undefined,
            "data-disabled": disabled || undefined,
            color: action === "delete" ? "red" : undefined,
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
                <Button variant={action === "delete" ? "subtle" : "light"} size="sm" leftSection={ICONS[action]} {...common}>
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
