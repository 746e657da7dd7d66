import { Alert } from "@mantine/core";
import { IconPlugConnectedX } from "@tabler/icons-react";
import { useEffect, useState } from "react";

import { connection, type Connection } from "../graphql/client";

/** Shown while the live-status websocket is lost; it goes away by itself when it comes back. */
export function ConnectionBanner() {
  const [state, setState] = useState<Connection>(connection.current);
  useEffect(() => connection.subscribe(setState), []);
  if (state !== "lost") return null;
  return (
    <Alert color="orange" icon={<IconPlugConnectedX size={18} />} role="status" data-testid="connection-lost" mb="md">
      Live updates are disconnected. Reconnecting… statuses shown may be out of date.
    </Alert>
  );
}
