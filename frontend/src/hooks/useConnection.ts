import { useEffect, useState } from "react";

import { connection, type Connection } from "../graphql/client";

/** The live-status websocket's state, re-rendering when it changes. */
export function useConnection(): Connection {
  const [state, setState] = useState<Connection>(connection.current);
  useEffect(() => connection.subscribe(setState), []);
  return state;
}
