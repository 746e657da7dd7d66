import { act, fireEvent, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import type { Client } from "urql";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fromValue, makeSubject, type Subject } from "wonka";

import { renderPage } from "../../test/render";
import { LogsPanel, addChunk, tailProblem } from "./LogsPanel";

type Line = { at: string | null; text: string; pod: string; container: string };
type Chunk = { containers: string[]; lines: Line[] };

function line(second: number, text: string, container = "main"): Line {
  return { at: `2025-01-01T00:00:${String(second).padStart(2, "0")}Z`, text, pod: "lab-6d4b9c-x2x9q", container };
}

/** A client whose log subscriptions are subjects the test pushes chunks into; `downloads`
 * answers the download query. */
function liveClient(download: (variables: Record<string, unknown>) => { data?: unknown; error?: unknown } = () => ({ data: { serviceInstanceLogs: { text: "x\n" } } })) {
  const streams: { variables: Record<string, unknown>; subject: Subject<{ data?: unknown; error?: unknown; hasNext?: boolean }> }[] = [];
  const queries: Record<string, unknown>[] = [];
  const client = {
    executeQuery: vi.fn(() => fromValue({})),
    executeMutation: vi.fn(() => fromValue({})),
    executeSubscription: vi.fn((request: { variables: Record<string, unknown> }) => {
      const subject = makeSubject<{ data?: unknown; error?: unknown; hasNext?: boolean }>();
      streams.push({ variables: request.variables, subject });
      return subject.source;
    }),
    query: vi.fn((_query: unknown, variables: Record<string, unknown>) => {
      queries.push(variables);
      return { toPromise: () => Promise.resolve(download(variables)) };
    }),
  } as unknown as Client;
  const push = (chunk: Chunk, stream = streams.at(-1)!) =>
    act(() => stream.subject.next({ data: { serviceInstanceLogs: chunk }, hasNext: true }));
  return { client, streams, queries, push };
}

/** The server completes the subscription: urql's last result says there is no more. */
const end = (stream: { subject: Subject<{ data?: unknown; error?: unknown; hasNext?: boolean }> }) =>
  act(() => {
    stream.subject.next({ hasNext: false });
    stream.subject.complete();
  });

function shownLines(): string[] {
  return within(screen.getByLabelText("Log lines"))
    .queryAllByText((_, element) => element?.hasAttribute("data-log-line") ?? false)
    .map((element) => element.textContent!.replace(/^\S*\s?\S*\s/, "").trim());
}

function texts(): string[] {
  return Array.from(document.querySelectorAll("[data-log-line]")).map((element) => element.lastChild!.textContent!);
}

afterEach(() => vi.restoreAllMocks());

function read(blob: Blob): Promise<string> {
  return new Promise((resolve) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.readAsText(blob);
  });
}

describe("LogsPanel", () => {
  it("follows the log live from its last 500 lines, pauses and follows again", async () => {
    const fake = liveClient();
    renderPage(<LogsPanel service={{ id: "s1", name: "lab" }} status="RUNNING" />, { client: fake.client });
    expect(fake.streams).toHaveLength(1);
    expect(fake.streams[0].variables).toEqual({ id: "s1", container: null, tailLines: 500, follow: true, previous: false });
    expect(screen.getByText("Waiting for the log…")).toBeInTheDocument();
    fake.push({ containers: ["main"], lines: [line(1, 'Pulling image "pytorch"'), line(2, "Started container main")] });
    expect(texts()).toEqual(['Pulling image "pytorch"', "Started container main"]);
    // one container: no choice offered
    expect(screen.queryByLabelText("Container")).toBeNull();

    await userEvent.click(screen.getByRole("button", { name: "Pause" }));
    expect(screen.getByText("Paused")).toBeInTheDocument();
    fake.push({ containers: ["main"], lines: [line(3, "Ready: listening on 8888/TCP (jupyter)")] });
    expect(texts()).toHaveLength(2);
    expect(screen.getByTestId("log-waiting")).toHaveTextContent("1 new line while paused");
    await userEvent.click(screen.getByRole("button", { name: "Follow" }));
    expect(texts()).toEqual(['Pulling image "pytorch"', "Started container main", "Ready: listening on 8888/TCP (jupyter)"]);
    expect(screen.queryByTestId("log-waiting")).toBeNull();

    // Paused when the container stops: its last lines wait for Follow, then the log has ended.
    await userEvent.click(screen.getByRole("button", { name: "Pause" }));
    fake.push({ containers: ["main"], lines: [line(4, "Received SIGTERM: stopping"), line(5, "Exited with code 0")] });
    end(fake.streams[0]);
    expect(screen.getByTestId("log-waiting")).toHaveTextContent("2 new lines while paused");
    expect(screen.queryByTestId("log-ended")).toBeNull();
    await userEvent.click(screen.getByRole("button", { name: "Follow" }));
    expect(texts().slice(-2)).toEqual(["Received SIGTERM: stopping", "Exited with code 0"]);
    expect(screen.getByTestId("log-ended")).toHaveTextContent("The container stopped: its log ended.");
    expect(shownLines()).toHaveLength(5);
    // Read again: a new read from its tail.
    await userEvent.click(screen.getByRole("button", { name: "Read again" }));
    expect(fake.streams).toHaveLength(2);
  });

  it("offers the containers when the pod has several, a tail within the API's range, and the previous container", async () => {
    const fake = liveClient();
    renderPage(<LogsPanel service={{ id: "s1", name: "lab" }} status="RUNNING" />, { client: fake.client });
    fake.push({ containers: ["main", "ssh"], lines: [line(1, "Started container main")] });
    const select = await screen.findByRole("combobox", { name: "Container" });
    fireEvent.click(select);
    fireEvent.click(await screen.findByRole("option", { name: "ssh", hidden: true }));
    await waitFor(() => expect(fake.streams).toHaveLength(2));
    expect(fake.streams[1].variables).toMatchObject({ container: "ssh", tailLines: 500, follow: true });
    fake.push({ containers: ["main", "ssh"], lines: [line(2, "sshd listening on 2222", "ssh")] });
    expect(texts()).toEqual(["sshd listening on 2222"]);

    const tail = screen.getByRole("textbox", { name: "Tail (lines)" });
    await userEvent.clear(tail);
    await userEvent.type(tail, "20000");
    expect(await screen.findByText("Tail: a whole number of lines from 1 to 10000.")).toBeInTheDocument();
    fireEvent.blur(tail);
    expect(fake.streams).toHaveLength(2); // nothing asked with a tail the API refuses
    await userEvent.clear(tail);
    await userEvent.type(tail, "50{Enter}");
    await waitFor(() => expect(fake.streams).toHaveLength(3));
    expect(fake.streams[2].variables).toMatchObject({ container: "ssh", tailLines: 50 });

    await userEvent.click(screen.getByRole("switch", { name: /Previous container/ }));
    await waitFor(() => expect(fake.streams).toHaveLength(4));
    expect(fake.streams[3].variables).toMatchObject({ container: "ssh", tailLines: 50, previous: true, follow: false });
    act(() =>
      fake.streams[3].subject.next({
        error: { message: '[GraphQL] previous terminated container "ssh" in pod "lab-1" not found', graphQLErrors: [{ message: 'the log of service instance "lab": previous terminated container "ssh" in pod "lab-1" not found' }] },
      }),
    );
    expect(await screen.findByRole("alert")).toHaveTextContent('previous terminated container "ssh" in pod "lab-1" not found');
  });

  it("shows why a log is refused, as the API says it", async () => {
    const fake = liveClient();
    renderPage(<LogsPanel service={{ id: "s1", name: "lab" }} status="RUNNING" />, { client: fake.client });
    const message = 'Only the owner of service instance "lab" and its project\'s admins read its logs (a log may hold its token).';
    act(() => fake.streams[0].subject.next({ error: { message: `[GraphQL] ${message}`, graphQLErrors: [{ message }] } }));
    expect(await screen.findByRole("alert")).toHaveTextContent(message);
  });

  it("downloads the log through the query, as a file named after the service", async () => {
    const created: Blob[] = [];
    vi.spyOn(URL, "createObjectURL").mockImplementation((blob) => {
      created.push(blob as Blob);
      return "blob:log";
    });
    vi.spyOn(URL, "revokeObjectURL").mockImplementation(() => {});
    const names: string[] = [];
    vi.spyOn(HTMLAnchorElement.prototype, "click").mockImplementation(function (this: HTMLAnchorElement) {
      names.push(this.download);
    });
    const text = "2025-01-01T00:00:01+00:00 Started container main\n";
    const fake = liveClient(() => ({ data: { serviceInstanceLogs: { text } } }));
    renderPage(<LogsPanel service={{ id: "s1", name: "lab" }} status="RUNNING" />, { client: fake.client });
    await userEvent.click(screen.getByRole("button", { name: "Download" }));
    await waitFor(() => expect(names).toHaveLength(1));
    expect(fake.queries).toEqual([{ id: "s1", container: null, previous: false }]);
    expect(names[0]).toMatch(/^lab-.*\.log$/);
    expect(await read(created[0])).toBe(text);
  });

  it("says why a download failed", async () => {
    const fake = liveClient(() => ({ error: { message: "[GraphQL] it has no pod: it is not running", graphQLErrors: [{ message: 'the log of service instance "lab": it has no pod: it is not running' }] } }));
    const click = vi.spyOn(HTMLAnchorElement.prototype, "click").mockImplementation(() => {});
    const { MantineProvider } = await import("@mantine/core");
    const { Notifications } = await import("@mantine/notifications");
    renderPage(
      <MantineProvider>
        <Notifications />
        <LogsPanel service={{ id: "s1", name: "lab" }} status="STOPPED" />
      </MantineProvider>,
      { client: fake.client },
    );
    await userEvent.click(screen.getByRole("button", { name: "Download" }));
    expect(await screen.findByText('the log of service instance "lab": it has no pod: it is not running')).toBeInTheDocument();
    expect(click).not.toHaveBeenCalled();
  });

  it("reads the new pod's log when the service runs again", async () => {
    const fake = liveClient();
    const view = renderPage(<LogsPanel service={{ id: "s1", name: "lab" }} status="STOPPED" />, { client: fake.client });
    expect(fake.streams).toHaveLength(1);
    const { MantineProvider } = await import("@mantine/core");
    const { Provider } = await import("urql");
    const { MemoryRouter } = await import("react-router-dom");
    view.rerender(
      <MantineProvider>
        <Provider value={fake.client}>
          <MemoryRouter>
            <LogsPanel service={{ id: "s1", name: "lab" }} status="RUNNING" />
          </MemoryRouter>
        </Provider>
      </MantineProvider>,
    );
    await waitFor(() => expect(fake.streams).toHaveLength(2));
  });
});

describe("addChunk", () => {
  it("keeps the lines in order and leaves out a tail sent again after a reconnect", () => {
    const first = addChunk(undefined, { containers: ["main"], lines: [line(1, "a"), line(2, "b"), line(2, "c")] });
    expect(first.lines.map((l) => [l.seq, l.text])).toEqual([[0, "a"], [1, "b"], [2, "c"]]);
    const again = addChunk(first, { containers: ["main"], lines: [line(1, "a"), line(2, "b"), line(2, "c"), line(3, "d")] });
    expect(again.lines.map((l) => l.text)).toEqual(["a", "b", "c", "d"]);
    expect(again.received).toBe(4);
    // a new pod's lines are all new
    const other = addChunk(again, { containers: ["main"], lines: [{ ...line(1, "a"), pod: "lab-other" }] });
    expect(other.lines.map((l) => l.text)).toEqual(["a", "b", "c", "d", "a"]);
  });

  it("keeps the last 5000 lines", () => {
    const many = Array.from({ length: 5003 }, (_, i) => ({ ...line(0, `line ${i}`), at: null }));
    const state = addChunk(undefined, { containers: ["main"], lines: many });
    expect(state.lines).toHaveLength(5000);
    expect(state.lines[0].text).toBe("line 3");
    expect(state.received).toBe(5003);
  });
});

describe("tailProblem", () => {
  it("takes 1 to 10000 whole lines", () => {
    expect(tailProblem(1)).toBeNull();
    expect(tailProblem(10000)).toBeNull();
    for (const bad of [0, 10001, 2.5, "", "abc"]) expect(tailProblem(bad)).toBe("Tail: a whole number of lines from 1 to 10000.");
  });
});
