import { useSubscription } from "urql";

import { graphql } from "../../gql";
import type { InstanceEventsSubscription } from "../../gql/graphql";
import type { InstanceAction } from "./actions";
import { useSettleDeploying } from "./deployToast";

/** Every status change of the project's instances (and those shared with it): a snapshot of each
 * first, then the changes. `$after` is never given by a page: the client sends the cursor of the
 * last event when it subscribes again after a reconnect (graphql/client.ts), and the server
 * replays what the page missed. */
export const InstanceEventsDocument = graphql(`
  subscription InstanceEvents($project: String!, $after: String) {
    computeInstanceEvents(project: $project, after: $after) {
      status
      message
      at
      cursor
      source
      missedEvents
      instance {
        id
        name
        displayName
        updatedAt
        ...InstanceActions
        project {
          id
          name
        }
        owner {
          username
        }
      }
    }
  }
`);

export interface LiveEvent {
  id: string;
  name: string;
  displayName: string;
  project: string;
  /** Its owner's username (null: no owner). */
  owner: string | null;
  status: string;
  message: string | null;
  at: string;
  /** What the caller may do with it now that it has this status. */
  actions: readonly InstanceAction[];
}

export interface LiveState {
  /** The latest event of each instance (the snapshots' included). */
  byId: Record<string, LiveEvent>;
  /** The latest changes, newest first (replayed ones included; snapshots are no change). */
  feed: LiveEvent[];
  /** The cursor of the last snapshot that came because events were missed (the socket was down
   * longer than the server keeps them): what lists show may be out of date, ask again. */
  missed: string | null;
}

const FEED_SIZE = 20;
export const EMPTY_LIVE: LiveState = { byId: {}, feed: [], missed: null };

function time(value: string): number {
  const parsed = Date.parse(value);
  return Number.isNaN(parsed) ? 0 : parsed;
}

export function reduceLive(previous: LiveState | undefined, data: InstanceEventsSubscription): LiveState {
  const state = previous ?? EMPTY_LIVE;
  const event = data.computeInstanceEvents;
  const live: LiveEvent = {
    id: event.instance.id,
    name: event.instance.name,
    displayName: event.instance.displayName,
    project: event.instance.project.name,
    owner: event.instance.owner?.username ?? null,
    status: event.status,
    message: event.message ?? null,
    at: event.at,
    actions: event.instance.actions,
  };
  const missed = event.missedEvents ? (event.cursor ?? state.missed ?? "") : state.missed;
  const known = state.byId[live.id];
  // Events come in order per instance; never go back to an older one.
  if (known && time(known.at) > time(live.at)) return missed === state.missed ? state : { ...state, missed };
  const byId = { ...state.byId, [live.id]: live };
  if (event.source === "SNAPSHOT") return { byId, feed: state.feed, missed };
  return { byId, feed: [live, ...state.feed].slice(0, FEED_SIZE), missed };
}

/** The live status events of a project's instances, from the moment the page opened, resumed
 * after every reconnect. */
export function useInstanceEvents(project: string): LiveState {
  const [{ data }] = useSubscription({ query: InstanceEventsDocument, variables: { project }, pause: !project }, reduceLive);
  const newest = data?.feed[0];
  useSettleDeploying(newest ? { id: newest.id, status: newest.status, message: newest.message, name: newest.displayName } : null);
  return data ?? EMPTY_LIVE;
}

/** A row's status (and what the caller may do now): the live event's when it is newer than what
 * the query returned. */
export function currentStatus(
  row: { id: string; status: string; statusMessage?: string | null; updatedAt: string; actions?: readonly InstanceAction[] },
  live: LiveState,
): { status: string; message: string | null; actions: readonly InstanceAction[] } {
  const event = live.byId[row.id];
  if (event && time(event.at) >= time(row.updatedAt)) return { status: event.status, message: event.message, actions: event.actions };
  return { status: row.status, message: row.statusMessage ?? null, actions: row.actions ?? [] };
}
