import { Alert, Button, Group, Modal, Stack, Text, Tooltip, VisuallyHidden, type ButtonProps } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { showDeploying } from "./deployToast";
import { IconAlertTriangle } from "@tabler/icons-react";
import { useId, useState, type MouseEvent, type ReactNode } from "react";
import { Link } from "react-router-dom";
import { useMutation } from "urql";

import { describeError } from "../../components/errors";
import { graphql } from "../../gql";
import type { DeploymentStatus, InstanceActionsFragment } from "../../gql/graphql";

/** What the caller may do with a compute instance now, as the API says (select it wherever a
 * button or menu item offers one of them). */
export const InstanceActionsDocument = graphql(`
  fragment InstanceActions on ComputeInstance {
    actions {
      name
      allowed
      reason
    }
  }
`);

export const InstanceDeployDocument = graphql(`
  mutation InstanceDeploy($id: ID!) {
    deployComputeInstance(id: $id) {
      computeInstance {
        id
        status
        statusMessage
        updatedAt
        ...InstanceActions
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const InstanceDestroyDocument = graphql(`
  mutation InstanceDestroy($id: ID!) {
    destroyComputeInstance(id: $id) {
      computeInstance {
        id
        status
        statusMessage
        updatedAt
        ...InstanceActions
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const InstanceDeleteDocument = graphql(`
  mutation InstanceDelete($id: ID!) {
    deleteComputeInstance(id: $id) {
      deletedId
      userErrors {
        field
        message
        code
      }
    }
  }
`);

/** The minimum an action needs to know about an instance (its status says what a delete does). */
export interface InstanceRef {
  id: string;
  name: string;
  displayName: string;
  status: string;
}

export type InstanceAction = InstanceActionsFragment["actions"][number];

export interface StatusChange {
  id: string;
  status: DeploymentStatus;
  statusMessage?: string | null;
  updatedAt: string;
  actions: InstanceAction[];
}

type Errors = readonly { message: string }[];

function problem(error: { message: string } | undefined, userErrors: Errors | undefined): string | null {
  if (error) return describeError(error as Parameters<typeof describeError>[0]);
  if (userErrors?.length) return userErrors.map((e) => e.message).join("; ");
  return null;
}

/** Deploy, destroy and delete, with their outcome told in notifications. */
export function useInstanceActions() {
  const [, deployMutation] = useMutation(InstanceDeployDocument);
  const [, destroyMutation] = useMutation(InstanceDestroyDocument);
  const [, deleteMutation] = useMutation(InstanceDeleteDocument);

  const deploy = async (instance: InstanceRef): Promise<StatusChange | null> => {
    const result = await deployMutation({ id: instance.id });
    const payload = result.data?.deployComputeInstance;
    const failed = problem(result.error, payload?.userErrors);
    if (failed || !payload?.computeInstance) {
      notifications.show({ color: "red", title: `“${instance.displayName}” was not deployed`, message: failed ?? "No answer." });
      return null;
    }
    showDeploying(instance.id, `“${instance.displayName}” is queued for deployment.`);
    return payload.computeInstance;
  };

  const destroy = async (instance: InstanceRef): Promise<StatusChange | null> => {
    const result = await destroyMutation({ id: instance.id });
    const payload = result.data?.destroyComputeInstance;
    const failed = problem(result.error, payload?.userErrors);
    if (failed || !payload?.computeInstance) {
      notifications.show({ color: "red", title: `“${instance.displayName}” was not destroyed`, message: failed ?? "No answer." });
      return null;
    }
    notifications.show({ color: "orange", title: "Destroying", message: `The resources of “${instance.displayName}” are being destroyed.` });
    return payload.computeInstance;
  };

  /** The error message, or null once deleted (or being destroyed before it is removed). */
  const remove = async (instance: InstanceRef): Promise<string | null> => {
    const result = await deleteMutation({ id: instance.id });
    const payload = result.data?.deleteComputeInstance;
    const failed = problem(result.error, payload?.userErrors);
    if (failed) return failed;
    const deployed = instance.status !== "NOT_DEPLOYED";
    notifications.show({
      color: "green",
      title: deployed ? "Deleting" : "Deleted",
      message: deployed
        ? `“${instance.displayName}” is being destroyed; it is removed once its resources are gone.`
        : `“${instance.displayName}” is deleted.`,
    });
    return null;
  };

  return { deploy, destroy, remove };
}

/** A button that stays focusable and explains, in a tooltip and to screen readers, why it is disabled. */
export function ReasonButton({
  reason,
  onClick,
  to,
  children,
  ...props
}: ButtonProps & { reason: string | null; onClick?: () => void; to?: string; children: ReactNode }) {
  const id = useId();
  if (!reason) {
    if (to) {
      return (
        <Button {...props} component={Link} to={to}>
          {children}
        </Button>
      );
    }
    return (
      <Button {...props} onClick={onClick}>
        {children}
      </Button>
    );
  }
  return (
    <>
      <Tooltip label={reason} multiline w={300} withArrow events={{ hover: true, focus: true, touch: true }}>
        <Button
          {...props}
          data-disabled
          aria-disabled="true"
          aria-describedby={id}
          loading={false}
          onClick={(event: MouseEvent) => event.preventDefault()}
        >
          {children}
        </Button>
      </Tooltip>
      <VisuallyHidden id={id}>{reason}</VisuallyHidden>
    </>
  );
}

/** "Delete compute instance?" with what happens to a deployed one; the server's refusal is shown in it. */
export function DeleteInstanceModal({
  instance,
  onClose,
  onDeleted,
}: {
  instance: InstanceRef | null;
  onClose: () => void;
  onDeleted: (instance: InstanceRef) => void;
}) {
  const { remove } = useInstanceActions();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const close = () => {
    setError(null);
    onClose();
  };
  return (
    <Modal opened={instance !== null} onClose={close} title="Delete compute instance" centered>
      {instance && (
        <Stack gap="md">
          <Text size="sm">
            Delete <b>{instance.displayName}</b> ({instance.name})?{" "}
            {instance.status === "NOT_DEPLOYED"
              ? "It is not deployed: it is removed at once."
              : "Its resources are destroyed first, then it is removed."}{" "}
            This cannot be undone.
          </Text>
          {error && (
            <Alert color="red" icon={<IconAlertTriangle size={18} />} role="alert">
              {error}
            </Alert>
          )}
          <Group justify="flex-end">
            <Button variant="default" onClick={close}>
              Cancel
            </Button>
            <Button
              color="red"
              loading={busy}
              onClick={async () => {
                setBusy(true);
                const failed = await remove(instance);
                setBusy(false);
                if (failed) {
                  setError(failed);
                  return;
                }
                setError(null);
                onDeleted(instance);
              }}
            >
              Delete
            </Button>
          </Group>
        </Stack>
      )}
    </Modal>
  );
}

/** "Destroy compute instance?": its resources go, the instance and its configuration stay. */
export function DestroyInstanceModal({
  instance,
  onClose,
  onConfirm,
  busy = false,
}: {
  instance: InstanceRef | null;
  onClose: () => void;
  onConfirm: () => Promise<void> | void;
  busy?: boolean;
}) {
  return (
    <Modal opened={instance !== null} onClose={onClose} title="Destroy compute instance" centered>
      {instance && (
        <Stack gap="md">
          <Text size="sm">
            Destroy the resources of <b>{instance.displayName}</b>? The instance and its configuration are kept (Not Deployed): you can deploy it again
            later.
          </Text>
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button color="orange" loading={busy} onClick={() => void onConfirm()}>
              Destroy
            </Button>
          </Group>
        </Stack>
      )}
    </Modal>
  );
}
