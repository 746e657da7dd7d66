/* The Logs panel of the service page: its container's log, followed live (tail N lines first),
 * paused and followed again, the previous container's, and a download of it as a file. */
import { Alert, Badge, Button, Group, NumberInput, ScrollArea, Select, Switch, Text, Tooltip } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { IconDownload, IconInfoCircle, IconPlayerPause, IconPlayerPlay, IconRefresh } from "@tabler/icons-react";
import { useEffect, useRef, useState } from "react";
import { useClient, useSubscription } from "urql";

import { describeError } from "../../components/errors";
import { streamState } from "../../components/ClusterEvents";
import { Panel } from "../../components/Section";
import type { ServiceLogsLiveSubscription, ServiceLogsLiveSubscriptionVariables, ServiceStatus } from "../../gql/graphql";
import { ServiceLogDownloadDocument, ServiceLogsLiveDocument } from "./queries";

/** The most lines the API sends from the end of a log, and the tail the panel starts with. */
export const MAX_TAIL = 10000;
export const DEFAULT_TAIL = 500;
/** The most lines the panel keeps (the oldest go first). */
export const KEPT_LINES = 5000;

export interface LogLine {
  seq: number;
  at: string | null;
  text: string;
  pod: string;
  container: string;
}

type Chunk = ServiceLogsLiveSubscription["serviceInstanceLogs"];

export interface LogState {
  lines: LogLine[];
  /** The chunk added last (urql hands the last one again when the stream ends). */
  last?: Chunk;
  /** How many lines came in all (the next line's seq). */
  received: number;
  containers: string[];
}

const EMPTY: LogState = { lines: [], received: 0, containers: [] };

/** `state` with a chunk's lines added. A chunk that repeats lines already there (the tail sent
 * again after the websocket reconnected) adds only those after the last one kept. */
export function addChunk(state: LogState | undefined, chunk: Chunk): LogState {
  const current = state ?? EMPTY;
  if (current.last === chunk) return current;
  const last = current.lines[current.lines.length - 1];
  let incoming = chunk.lines;
  if (last?.at) {
    const lastAt = Date.parse(last.at);
    const seenAtLast = new Set(current.lines.filter((l) => l.at === last.at && l.pod === last.pod).map((l) => l.text));
    incoming = incoming.filter((line) => {
      if (!line.at || line.pod !== last.pod) return true;
      const at = Date.parse(line.at);
      return at > lastAt || (at === lastAt && !seenAtLast.has(line.text));
    });
  }
  const added = incoming.map((line, index) => ({ ...line, at: line.at ?? null, seq: current.received + index }));
  return {
    lines: [...current.lines, ...added].slice(-KEPT_LINES),
    received: current.received + added.length,
    containers: chunk.containers.length ? [...chunk.containers] : current.containers,
    last: chunk,
  };
}

/** Why `value` is not a tail the API takes, or null. */
export function tailProblem(value: number | string): string | null {
  const number = typeof value === "number" ? value : Number(value);
  if (value === "" || !Number.isInteger(number) || number < 1 || number > MAX_TAIL) {
    return `Tail: a whole number of lines from 1 to ${MAX_TAIL}.`;
  }
  return null;
}

function stamp(at: string | null): string {
  if (!at) return "";
  const date = new Date(at);
  return Number.isNaN(date.getTime()) ? "" : date.toLocaleTimeString();
}

/** Saves `text` as the file `name`. */
function saveFile(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: "text/plain;charset=utf-8" }));
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.appendChild(link);
  link.click();
  link.remove();
  URL.revokeObjectURL(url);
}

interface Choice {
  container: string | null;
  tail: number;
  previous: boolean;
}

/** One read of the log with one choice of container, tail and previous; a new choice mounts a
 * new one (it starts over with its own tail). */
function LogStream({
  serviceId,
  choice,
  paused,
  onContainers,
  onEnded,
}: {
  serviceId: string;
  choice: Choice;
  paused: boolean;
  onContainers: (containers: string[]) => void;
  onEnded: (ended: boolean) => void;
}) {
  const variables: ServiceLogsLiveSubscriptionVariables = {
    id: serviceId,
    container: choice.container,
    tailLines: choice.tail,
    follow: !choice.previous,
    previous: choice.previous,
  };
  const [result] = useSubscription<ServiceLogsLiveSubscription, LogState, ServiceLogsLiveSubscriptionVariables>(
    { query: ServiceLogsLiveDocument, variables },
    (previous, next) => addChunk(previous, next.serviceInstanceLogs),
  );
  const { data, error } = result;
  const stream = streamState(result);
  const [pausedAt, setPausedAt] = useState<number | null>(null);
  const received = data?.received ?? 0;
  // Paused: the lines shown stay as they were; those that come meanwhile wait.
  if (paused && pausedAt === null) setPausedAt(received);
  if (!paused && pausedAt !== null) setPausedAt(null);
  const containers = data?.containers.join(",") ?? "";
  useEffect(() => {
    if (containers) onContainers(containers.split(","));
  }, [containers, onContainers]);
  const ended = stream === "ended";
  useEffect(() => onEnded(ended), [ended, onEnded]);

  const viewport = useRef<HTMLDivElement>(null);
  const lines = (data?.lines ?? []).filter((line) => pausedAt === null || line.seq < pausedAt);
  const shown = lines.length;
  useEffect(() => {
    const element = viewport.current;
    if (!paused && element && typeof element.scrollTo === "function") element.scrollTo({ top: element.scrollHeight });
  }, [shown, paused]);

  const problem = describeError(error);
  const waiting = pausedAt === null ? 0 : received - pausedAt;
  return (
    <>
      {problem && (
        <Alert color="gray" icon={<IconInfoCircle size={18} />} role="alert" title="No log to show" mb="xs">
          {problem}
        </Alert>
      )}
      {waiting > 0 && (
        <Text size="xs" c="orange" data-testid="log-waiting">
          {waiting} new {waiting === 1 ? "line" : "lines"} while paused: follow to see {waiting === 1 ? "it" : "them"}.
        </Text>
      )}
      <ScrollArea h={320} viewportRef={viewport} type="auto" bg="dark.8" style={{ borderRadius: 6 }}>
        <pre aria-label="Log lines" style={{ margin: 0, padding: 10, fontSize: 12, lineHeight: 1.45, color: "#e9ecef", whiteSpace: "pre-wrap", wordBreak: "break-all" }}>
          {lines.length === 0 && !problem ? (
            <span style={{ color: "#868e96" }}>{stream === "waiting" || stream === "live" ? "Waiting for the log…" : "The log is empty."}</span>
          ) : (
            lines.map((line) => (
              <div key={line.seq} data-log-line>
                <span style={{ color: "#868e96" }}>{stamp(line.at)} </span>
                {line.text}
              </div>
            ))
          )}
        </pre>
      </ScrollArea>
      {ended && pausedAt === null && (
        <Text size="xs" c="dimmed" mt={4} data-testid="log-ended">
          {choice.previous ? "This is the whole log of the previous container." : "The container stopped: its log ended."}
        </Text>
      )}
    </>
  );
}

/** The Logs panel: the service's container log, live. Its owner and the project's admins read it
 * (a log may hold the service's token); others see the API's reason. */
export function LogsPanel({ service, status }: { service: { id: string; name: string }; status: ServiceStatus }) {
  const client = useClient();
  const [container, setContainer] = useState<string | null>(null);
  const [containers, setContainers] = useState<string[]>([]);
  const [tailInput, setTailInput] = useState<number | string>(DEFAULT_TAIL);
  const [tail, setTail] = useState(DEFAULT_TAIL);
  const [previous, setPrevious] = useState(false);
  const [paused, setPaused] = useState(false);
  const [ended, setEnded] = useState(false);
  const [generation, setGeneration] = useState(0);
  const [downloading, setDownloading] = useState(false);
  const problem = tailProblem(tailInput);

  // A service that starts (again) has a new pod: read its log from the start.
  const [seenStatus, setSeenStatus] = useState(status);
  if (status !== seenStatus) {
    setSeenStatus(status);
    if (status === "RUNNING") setGeneration((g) => g + 1);
  }

  function applyTail() {
    if (tailProblem(tailInput) === null && Number(tailInput) !== tail) {
      setTail(Number(tailInput));
      setPaused(false);
    }
  }

  async function download() {
    setDownloading(true);
    const result = await client.query(ServiceLogDownloadDocument, { id: service.id, container, previous }, { requestPolicy: "network-only" }).toPromise();
    setDownloading(false);
    const text = result.data?.serviceInstanceLogs.text;
    if (result.error || text === undefined) {
      notifications.show({ color: "red", title: "Could not download the log", message: describeError(result.error) ?? "No answer from the server." });
      return;
    }
    const stampNow = new Date().toISOString().replace(/[:.]/g, "-");
    saveFile(`${service.name}${container ? `-${container}` : ""}${previous ? "-previous" : ""}-${stampNow}.log`, text);
  }

  const choice: Choice = { container, tail, previous };
  const key = `${container ?? ""}|${tail}|${previous}|${generation}`;
  // Paused, Follow shows what came meanwhile (even once the log ended); following, Pause holds
  // new lines back; an ended log (or the previous container's) may be read again.
  const following = !previous && !ended;
  return (
    <Panel
      title="Logs"
      action={
        <Group gap="xs">
          {paused || following ? (
            <Badge variant="dot" color={paused ? "orange" : "green"} size="sm">
              {paused ? "Paused" : "Following"}
            </Badge>
          ) : null}
          {paused || following ? (
            <Button
              size="xs"
              variant="default"
              leftSection={paused ? <IconPlayerPlay size={14} /> : <IconPlayerPause size={14} />}
              onClick={() => setPaused((p) => !p)}
            >
              {paused ? "Follow" : "Pause"}
            </Button>
          ) : (
            <Button size="xs" variant="default" leftSection={<IconRefresh size={14} />} onClick={() => {
                setGeneration((g) => g + 1);
                setPaused(false);
              }}
            >
              Read again
            </Button>
          )}
          <Tooltip label="Its last 10000 lines, each with its time, as a .log file" withArrow>
            <Button size="xs" variant="light" leftSection={<IconDownload size={14} />} loading={downloading} onClick={() => void download()}>
              Download
            </Button>
          </Tooltip>
        </Group>
      }
    >
      <Group gap="sm" align="flex-end" mb="xs" wrap="wrap">
        {containers.length > 1 && (
          <Select
            label="Container"
            size="xs"
            w={160}
            data={containers}
            value={container ?? containers[0]}
            allowDeselect={false}
            onChange={(value) => {
              setContainer(value === containers[0] ? null : value);
              setPaused(false);
            }}
          />
        )}
        <NumberInput
          label="Tail (lines)"
          size="xs"
          w={130}
          min={1}
          max={MAX_TAIL}
          allowDecimal={false}
          allowNegative={false}
          value={tailInput}
          onChange={setTailInput}
          onBlur={applyTail}
          onKeyDown={(event) => {
            if (event.key === "Enter") applyTail();
          }}
          error={problem}
        />
        <Switch
          label="Previous container"
          size="xs"
          checked={previous}
          onChange={(event) => {
            setPrevious(event.currentTarget.checked);
            setPaused(false);
          }}
          description="before its last restart"
        />
      </Group>
      <LogStream key={key} serviceId={service.id} choice={choice} paused={paused} onContainers={setContainers} onEnded={setEnded} />
    </Panel>
  );
}
