import { ActionIcon, Loader, Menu, Stack, Text } from "@mantine/core";
import { IconDots, IconEdit, IconPlayerPlay, IconShare, IconTrash, IconWreckingBall } from "@tabler/icons-react";
import type { ReactNode } from "react";
import { Link } from "react-router-dom";

import { whyNot } from "../../components/actions";
import type { InstanceAction } from "./actions";

function MenuAction({
  reason,
  icon,
  color,
  onClick,
  children,
}: {
  reason: string | null;
  icon: ReactNode;
  color?: string;
  onClick: () => void;
  children: ReactNode;
}) {
  return (
    <Menu.Item leftSection={icon} color={reason ? undefined : color} disabled={reason !== null} onClick={onClick}>
      <Stack gap={0}>
        <Text size="sm">{children}</Text>
        {reason && (
          <Text size="xs" c="dimmed" maw={240} style={{ whiteSpace: "normal" }}>
            {reason}
          </Text>
        )}
      </Stack>
    </Menu.Item>
  );
}

/** A row's menu: Edit Configuration, Deploy, Destroy, Manage Sharing and Delete, each as the API
 * says the caller may now (a spinner while one of them runs). */
export function InstanceRowMenu({
  row,
  actions,
  base,
  busy,
  onDeploy,
  onDestroy,
  onShare,
  onDelete,
}: {
  row: { id: string; displayName: string };
  actions: readonly InstanceAction[];
  base: string;
  busy: boolean;
  onDeploy: () => void;
  onDestroy: () => void;
  onShare: () => void;
  onDelete: () => void;
}) {
  const editReason = whyNot(actions, "UPDATE");
  if (busy) return <Loader size="sm" aria-label={`Working on ${row.displayName}`} />;
  return (
    <Menu position="bottom-end" withinPortal>
      <Menu.Target>
        <ActionIcon variant="subtle" color="gray" aria-label={`Actions for ${row.displayName}`}>
          <IconDots size={18} />
        </ActionIcon>
      </Menu.Target>
      <Menu.Dropdown>
        {editReason ? (
          <MenuAction reason={editReason} icon={<IconEdit size={16} />} onClick={() => undefined}>
            Edit Configuration
          </MenuAction>
        ) : (
          <Menu.Item leftSection={<IconEdit size={16} />} component={Link} to={`${base}/instances/${row.id}/edit`}>
            Edit Configuration
          </Menu.Item>
        )}
        <MenuAction reason={whyNot(actions, "DEPLOY")} icon={<IconPlayerPlay size={16} />} onClick={onDeploy}>
          Deploy
        </MenuAction>
        <MenuAction reason={whyNot(actions, "DESTROY")} icon={<IconWreckingBall size={16} />} color="orange" onClick={onDestroy}>
          Destroy
        </MenuAction>
        <MenuAction reason={whyNot(actions, "SHARE")} icon={<IconShare size={16} />} onClick={onShare}>
          Manage Sharing
        </MenuAction>
        <Menu.Divider />
        <MenuAction reason={whyNot(actions, "DELETE")} icon={<IconTrash size={16} />} color="red" onClick={onDelete}>
          Delete
        </MenuAction>
      </Menu.Dropdown>
    </Menu>
  );
}
