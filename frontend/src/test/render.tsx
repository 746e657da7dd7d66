import { MantineProvider } from "@mantine/core";
import { render, type RenderResult } from "@testing-library/react";
import type { ReactElement } from "react";
import { MemoryRouter, Route, Routes } from "react-router-dom";
import { Provider, type Client } from "urql";
import { fromArray, fromValue, never } from "wonka";
import { vi } from "vitest";

type Answer = { data?: unknown; error?: unknown };
type Handler = (variables: Record<string, unknown>) => Answer;

/** A fake urql client: `answers` maps an operation name ("Me", "CreateComputeProfile") to its
 * answer (or a function of the variables; a list: the events of a subscription, in order).
 * `calls` records every operation sent. Subscriptions never emit unless answered. */
export function fakeClient(answers: Record<string, Answer | Answer[] | Handler> = {}) {
  const calls: { name: string; variables: Record<string, unknown> }[] = [];
  const respond = (operation: { query: unknown; variables?: unknown }) => {
    const query = operation.query as { definitions: { name?: { value: string } }[] };
    const name = query.definitions.find((d) => d.name)?.name?.value ?? "";
    const variables = (operation.variables ?? {}) as Record<string, unknown>;
    calls.push({ name, variables });
    const answer = answers[name];
    if (answer === undefined) return never;
    if (Array.isArray(answer)) return fromArray(answer);
    return fromValue(typeof answer === "function" ? answer(variables) : answer);
  };
  const client = {
    executeQuery: vi.fn((request) => respond(request)),
    executeMutation: vi.fn((request) => respond(request)),
    executeSubscription: vi.fn((request) => respond(request)),
  } as unknown as Client;
  return { client, calls };
}

/** `ui` with Mantine, a fake urql client and a router at `path` (matched by `pattern`). */
export function renderPage(
  ui: ReactElement,
  { client, path = "/p/ml", pattern = "/p/:project/*" }: { client: Client; path?: string; pattern?: string },
): RenderResult {
  return render(
    <MantineProvider>
      <Provider value={client}>
        <MemoryRouter initialEntries={[path]}>
          <Routes>
            <Route path={pattern} element={ui} />
          </Routes>
        </MemoryRouter>
      </Provider>
    </MantineProvider>,
  );
}
