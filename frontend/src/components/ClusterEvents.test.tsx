import { act, screen, within } from "@testing-library/react";
import type { Client } from "urql";
import { describe, expect, it, vi } from "vitest";
import { fromValue, makeSubject, type Subject } from "wonka";

import { renderPage } from "../test/render";
import { ClusterEventsPanel, MAX_EVENTS, addEvent, type ClusterEvent } from "./ClusterEvents";

type Result = { data?: unknown; error?: unknown; hasNext?: boolean };

function event(name: string, reason: string, extra: Partial<ClusterEvent> = {}): ClusterEvent {
  return {
    name,
    type: "NORMAL",
    reason,
    message: `${reason} happened`,
    objectKind: "Pod",
    objectName: "lab-6d4b9c-x2x9q",
    count: 1,
    firstAt: "2025-01-01T00:00:01Z",
    lastAt: "2025-01-01T00:00:01Z",
    ...extra,
  };
}

function liveClient() {
  const streams: { name: string; variables: Record<string, unknown>; subject: Subject<Result> }[] = [];
  const client = {
    executeQuery: vi.fn(() => fromValue({})),
    executeMutation: vi.fn(() => fromValue({})),
    executeSubscription: vi.fn((request: { query: { definitions: { name?: { value: string } }[] }; variables: Record<string, unknown> }) => {
      const subject = makeSubject<Result>();
      const name = request.query.definitions.find((d) => d.name)?.name?.value ?? "";
      streams.push({ name, variables: request.variables, subject });
      return subject.source;
    }),
  } as unknown as Client;
  return { client, streams };
}

function rows(): string[][] {
  const table = screen.getByRole("table", { name: "Events" });
  return within(table)
    .getAllByRole("row")
    .slice(1)
    .map((row) => within(row).getAllByRole("cell").map((cell) => cell.textContent ?? ""));
}

describe("ClusterEventsPanel", () => {
  it("shows a service's events live, a repeat in place of the one before with its count", () => {
    const fake = liveClient();
    renderPage(<ClusterEventsPanel kind="service" id="s1" />, { client: fake.client });
    expect(fake.streams.map((s) => [s.name, s.variables])).toEqual([["ServiceEventsLive", { id: "s1" }]]);
    expect(screen.getByText(/No events yet/)).toBeInTheDocument();
    const send = (e: ClusterEvent) => act(() => fake.streams[0].subject.next({ data: { serviceInstanceClusterEvents: e }, hasNext: true }));
    send(event("a", "Scheduled", { objectKind: "Pod", message: "Successfully assigned ns/lab-1 to node-1" }));
    send(event("b", "BackOff", { type: "WARNING", message: 'Back-off pulling image "x"', lastAt: "2025-01-01T00:00:02Z" }));
    expect(rows().map((r) => [r[0], r[1], r[2], r[3], r[4]])).toEqual([
      ["Normal", "Scheduled", "Pod/lab-6d4b9c-x2x9q", "Successfully assigned ns/lab-1 to node-1", "1"],
      ["Warning", "BackOff", "Pod/lab-6d4b9c-x2x9q", 'Back-off pulling image "x"', "1"],
    ]);
    // the same event again (same name): one row, its count raised, now the newest
    send(event("a", "Scheduled", { count: 2, message: "Successfully assigned ns/lab-1 to node-1", lastAt: "2025-01-01T00:00:03Z" }));
    expect(rows().map((r) => [r[1], r[4]])).toEqual([
      ["BackOff", "1"],
      ["Scheduled", "2"],
    ]);
    expect(screen.getByText("Live")).toBeInTheDocument();
  });

  it("reads a compute instance's events, and says why when they cannot be read", async () => {
    const fake = liveClient();
    renderPage(<ClusterEventsPanel kind="compute" id="c1" />, { client: fake.client });
    expect(fake.streams[0].name).toBe("ComputeEventsLive");
    act(() => fake.streams[0].subject.next({ data: { computeInstanceClusterEvents: event("a", "ScalingReplicaSet", { objectKind: "Deployment", objectName: "trainer" }) }, hasNext: true }));
    expect(rows()[0][2]).toBe("Deployment/trainer");
    const message = 'the events of compute instance "box": the API server at https://k8s:6443 did not answer';
    act(() => fake.streams[0].subject.next({ error: { message: `[GraphQL] ${message}`, graphQLErrors: [{ message }] } }));
    expect(await screen.findByRole("alert")).toHaveTextContent(message);
    expect(screen.getByText("Stopped")).toBeInTheDocument();
  });
});

describe("addEvent", () => {
  it("keeps the newest events, ordered by when they were last seen", () => {
    let events: ClusterEvent[] = [];
    for (let i = 0; i < MAX_EVENTS + 5; i++) {
      events = addEvent(events, event(`e${i}`, "Pulled", { lastAt: new Date(Date.UTC(2025, 0, 1, 0, 0, i)).toISOString() }));
    }
    expect(events).toHaveLength(MAX_EVENTS);
    expect(events[0].name).toBe("e5");
    expect(events.at(-1)!.name).toBe(`e${MAX_EVENTS + 4}`);
  });
});
