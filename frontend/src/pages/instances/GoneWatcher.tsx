import { useEffect } from "react";
import { useQuery } from "urql";

import { graphql } from "../../gql";

export const InstanceGoneCheckDocument = graphql(`
  query InstanceGoneCheck($id: ID!) {
    computeInstance(id: $id) {
      id
      status
    }
  }
`);

/** Deleting a deployed instance destroys it first, and the project's events say nothing once it is
 * removed: while a row is Destroying, this asks every few seconds whether it still exists. */
export function GoneWatcher({ id, onGone }: { id: string; onGone: (id: string) => void }) {
  const [{ data, fetching }, reexecute] = useQuery({ query: InstanceGoneCheckDocument, variables: { id }, requestPolicy: "network-only" });
  useEffect(() => {
    if (data && data.computeInstance === null) onGone(id);
  }, [data, id, onGone]);
  useEffect(() => {
    if (fetching) return;
    const timer = window.setTimeout(() => reexecute({ requestPolicy: "network-only" }), 3000);
    return () => window.clearTimeout(timer);
  }, [fetching, data, reexecute]);
  return null;
}
