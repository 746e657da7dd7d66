import { useCallback, useState } from "react";
import { useQuery, type CombinedError } from "urql";

import { graphql } from "../../gql";
import type { DeploymentStatus, InstancesListQuery } from "../../gql/graphql";

export const InstancesListDocument = graphql(`
  query InstancesList($project: String!, $search: String, $status: [DeploymentStatus!], $mine: Boolean, $first: Int, $after: String) {
    computeInstances(project: $project, search: $search, status: $status, mine: $mine, first: $first, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        cursor
        node {
          id
          name
          displayName
          profileName
          status
          statusMessage
          createdAt
          updatedAt
          project {
            id
            name
            displayName
          }
          profile {
            id
          }
          owner {
            username
          }
          sharing {
            mode
            projects {
              id
              name
              displayName
            }
          }
          ...InstanceActions
        }
      }
    }
  }
`);

export type Connection = InstancesListQuery["computeInstances"];
export type Edge = Connection["edges"][number];
export type Row = Edge["node"];

export const PAGE_SIZE = 20;

/** Newest first, as the API orders them: by creation time, then id. */
function compare(a: Edge, b: Edge): number {
  const byTime = Date.parse(b.node.createdAt) - Date.parse(a.node.createdAt);
  if (byTime !== 0) return byTime;
  return a.node.id < b.node.id ? 1 : a.node.id > b.node.id ? -1 : 0;
}

/**
 * A page is the truth about the range it covers: rows after `after` (exclusive) down to its last
 * row (or the end, when it has no next page). Rows of that range it lacks are gone; rows outside
 * it are kept, so that a refreshed first page does not drop rows loaded with "Load more".
 */
export function mergePage(rows: readonly Edge[], page: Connection, after: Edge | null): Edge[] {
  const last = page.pageInfo.hasNextPage ? page.edges[page.edges.length - 1] ?? null : null;
  const inRange = (edge: Edge) => (after === null || compare(edge, after) > 0) && (last === null || compare(edge, last) <= 0);
  const fresh = new Set(page.edges.map((edge) => edge.node.id));
  const kept = rows.filter((edge) => !inRange(edge) && !fresh.has(edge.node.id));
  return [...kept, ...page.edges].sort(compare);
}

interface ListState {
  key: string;
  loaded: boolean;
  rows: Edge[];
  total: number;
  /** A page said there is nothing after it: every row is loaded. */
  complete: boolean;
}

const initial = (key: string): ListState => ({ key, loaded: false, rows: [], total: 0, complete: false });

/**
 * A project's compute instances, newest first, with "Load more" (cursor pages of PAGE_SIZE).
 * `refresh` asks the first page again; `patch` and `drop` change rows after a mutation.
 */
export function useInstanceList(project: string, search: string, status: DeploymentStatus | null, mine = false) {
  const key = JSON.stringify([project, search, status, mine]);
  const filters = { project, search: search || null, status: status ? [status] : null, mine: mine || null, first: PAGE_SIZE };
  const [firstPage, reexecute] = useQuery({ query: InstancesListDocument, variables: filters, requestPolicy: "cache-and-network" });
  const [more, setMore] = useState<{ key: string; after: Edge } | null>(null);
  const loadingMore = more !== null && more.key === key;
  const [nextPage] = useQuery({
    query: InstancesListDocument,
    variables: { ...filters, after: more?.after.cursor ?? null },
    pause: !loadingMore,
    requestPolicy: "network-only",
  });
  const [state, setState] = useState<ListState>(() => initial(key));
  const current = state.key === key ? state : initial(key);

  // Answers are folded into the rows as they settle (during render, when a new one is there: an
  // effect would render the old rows first). While fetching, urql still shows the previous
  // variables' answer: only settled answers count.
  const [applied, setApplied] = useState<{ first: Connection | null; next: Connection | null }>({ first: null, next: null });
  const apply = (page: Connection, after: Edge | null) =>
    setState((previous) => {
      const base = previous.key === key ? previous : initial(key);
      return {
        key,
        loaded: true,
        rows: mergePage(base.rows, page, after),
        total: page.totalCount,
        complete: base.complete || !page.pageInfo.hasNextPage,
      };
    });

  const firstData = firstPage.fetching ? undefined : firstPage.data?.computeInstances;
  if (firstData && firstData !== applied.first) {
    setApplied((done) => ({ ...done, first: firstData }));
    apply(firstData, null);
  }

  const [moreError, setMoreError] = useState<CombinedError | null>(null);
  const nextData = nextPage.fetching || !loadingMore ? undefined : nextPage.data?.computeInstances;
  if (more && more.key === key) {
    if (nextPage.error && !nextPage.fetching) {
      setMoreError(nextPage.error);
      setMore(null);
    } else if (nextData && nextData !== applied.next) {
      setApplied((done) => ({ ...done, next: nextData }));
      apply(nextData, more.after);
      setMoreError(null);
      setMore(null);
    }
  }

  const loadMore = () => {
    const last = current.rows[current.rows.length - 1];
    if (last) setMore({ key, after: last });
  };

  const refresh = useCallback(() => reexecute({ requestPolicy: "network-only" }), [reexecute]);

  const patch = useCallback(
    (id: string, change: Partial<Row>) =>
      setState((previous) => ({
        ...previous,
        rows: previous.rows.map((edge) => (edge.node.id === id ? { ...edge, node: { ...edge.node, ...change } } : edge)),
      })),
    [],
  );

  const drop = useCallback(
    (id: string) =>
      setState((previous) =>
        previous.rows.some((edge) => edge.node.id === id)
          ? { ...previous, rows: previous.rows.filter((edge) => edge.node.id !== id), total: Math.max(0, previous.total - 1) }
          : previous,
      ),
    [],
  );

  const error: CombinedError | undefined = firstPage.error;
  return {
    rows: current.rows.map((edge) => edge.node),
    total: current.total,
    loaded: current.loaded,
    hasMore: current.loaded && !current.complete && current.rows.length > 0,
    loadingMore,
    loadMoreError: moreError,
    error,
    fetching: firstPage.fetching,
    loadMore,
    refresh,
    patch,
    drop,
  };
}
