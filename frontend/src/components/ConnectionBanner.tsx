import { Alert } from "@mantine/core";
import { IconPlugConnectedX } from "@tabler/icons-react";
import { useConnection } from "../hooks/useConnection";

/** Shown while the live-status websocket is lost; it goes away by itself when it comes back. */
export function ConnectionBanner() {
  const state = useConnection();
  if (state !== "lost") return null;
  return (
    <Alert color="orange" icon={<IconPlugConnectedX size={18} />} role="status" data-testid="connection-lost" mb="md">
      Live updates are disconnected. Reconnecting… statuses shown may be out of date.
    </Alert>
  );
}
