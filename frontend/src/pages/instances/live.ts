import { useSubscription } from "urql";

import { graphql } from "../../gql";
import type { InstanceEventsSubscription } from "../../gql/graphql";
import type { InstanceAction } from "./actions";
import { useSettleDeploying } from "./deployToast";

/** Every status change of the project's instances (and those shared with it). */
export const InstanceEventsDocument = graphql(`
  subscription InstanceEvents($project: String!) {
    computeInstanceEvents(project: $project) {
      status
      message
      at
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
  /** The latest event of each instance. */
  byId: Record<string, LiveEvent>;
  /** The latest events, newest first. */
  feed: LiveEvent[];
}

const FEED_SIZE = 20;
export const EMPTY_LIVE: LiveState = { byId: {}, feed: [] };

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
  const known = state.byId[live.id];
  // Events come in order per instance; never go back to an older one.
  if (known && time(known.at) > time(live.at)) return state;
  return { byId: { ...state.byId, [live.id]: live }, feed: [live, ...state.feed].slice(0, FEED_SIZE) };
}

/** The live status events of a project's instances, from the moment the page opened. */
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
