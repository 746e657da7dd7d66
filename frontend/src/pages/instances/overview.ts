/* The compute instance page's data: what it shows of an instance (the query, and the live status
 * subscription that sends the instance along with each event), and the timeline of statuses. */
import { graphql } from "../../gql";
import type { InstanceOverviewFieldsFragment, InstanceStatusLiveSubscription } from "../../gql/graphql";

export const InstanceOverviewFieldsDocument = graphql(`
  fragment InstanceOverviewFields on ComputeInstance {
    id
    name
    displayName
    description
    profileName
    status
    statusMessage
    labels {
      key
      value
    }
    annotations {
      key
      value
    }
    inputs {
      key
      value
    }
    outputs {
      key
      value
    }
    allocationType
    resources {
      cpu
      memory
      storage
      gpuCount
      gpuVendor
      gpuModel
    }
    templateName
    templateVersion
    createdAt
    updatedAt
    project {
      id
      name
      displayName
    }
    profile {
      id
      name
      displayName
    }
    owner {
      username
    }
    outdated
    sharing {
      mode
      projects {
        id
        name
        displayName
      }
    }
    cluster {
      id
      name
      displayName
      gpuModels
    }
    services {
      id
      name
      displayName
      status
      statusMessage
      templateName
      template {
        id
        displayName
      }
    }
    ...InstanceActions
    runs {
      id
      action
      status
      message
      attempts
      createdAt
      startedAt
      finishedAt
    }
  }
`);

export const InstanceOverviewDocument = graphql(`
  query InstanceOverview($id: ID!) {
    computeInstance(id: $id) {
      ...InstanceOverviewFields
    }
  }
`);

/** `$after`: the client's, after a reconnect (graphql/client.ts); pages leave it out. */
export const InstanceStatusLiveDocument = graphql(`
  subscription InstanceStatusLive($id: ID!, $after: String) {
    computeInstanceStatus(id: $id, after: $after) {
      status
      message
      at
      cursor
      source
      missedEvents
      instance {
        ...InstanceOverviewFields
      }
    }
  }
`);

export type Instance = InstanceOverviewFieldsFragment;
type StatusEvent = InstanceStatusLiveSubscription["computeInstanceStatus"];

export interface Live {
  latest: StatusEvent;
  /** The statuses as they came, oldest first (`missed`: changes before this one were missed). */
  history: { status: string; message: string | null; at: string; missed?: boolean }[];
}

export function time(value: string): number {
  const parsed = Date.parse(value);
  return Number.isNaN(parsed) ? 0 : parsed;
}

export function reduceLive(previous: Live | undefined, data: InstanceStatusLiveSubscription): Live {
  const event = data.computeInstanceStatus;
  // Another instance (the page was reused for another id): start over.
  const history = previous && previous.latest.instance.id === event.instance.id ? previous.history : [];
  const last = history[history.length - 1];
  const missed = event.missedEvents && history.length > 0;
  const same = !missed && last && last.status === event.status && last.message === (event.message ?? null);
  const entry = { status: event.status, message: event.message ?? null, at: event.at, ...(missed ? { missed } : {}) };
  return { latest: event, history: same ? history : [...history, entry].slice(-12) };
}

/** The newest of what the query and the live events tell: the instance, and its status and
 * message as the event gave them. */
export function newest(queried: Instance, live: Live | undefined): { instance: Instance; status: string; message: string | null } {
  const event = live?.latest;
  if (event !== undefined && event.instance.id === queried.id && time(event.instance.updatedAt) >= time(queried.updatedAt)) {
    return { instance: event.instance, status: event.status, message: event.message ?? null };
  }
  return { instance: queried, status: queried.status, message: queried.statusMessage ?? null };
}

export function when(value: string | null | undefined): string {
  return value ? new Date(value).toLocaleString() : "—";
}
