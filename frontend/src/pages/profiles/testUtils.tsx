import type { ReactElement } from "react";
import { Route, Routes } from "react-router-dom";
import type { Client } from "urql";
import { concat, never } from "wonka";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";

/** The signed-in caller of the studio tests: an admin of "ml", a member of "vision". */
export const ME_ADMIN = {
  data: {
    me: {
      id: "u1",
      username: "alice",
      isPlatformAdmin: false,
      memberships: [
        { role: "ADMIN", project: { id: "p1", name: "ml", displayName: "Machine Learning" } },
        { role: "MEMBER", project: { id: "p2", name: "vision", displayName: "Vision" } },
      ],
    },
    projects: [
      { id: "p1", name: "ml", displayName: "Machine Learning" },
      { id: "p2", name: "vision", displayName: "Vision" },
    ],
  },
};

// jsdom has no document.fonts; Mantine's autosize Textarea listens to it. (The shared
// src/test/setup.ts would be the better home for this.)
if (!("fonts" in document)) {
  Object.defineProperty(document, "fonts", {
    configurable: true,
    value: { addEventListener: () => {}, removeEventListener: () => {}, ready: Promise.resolve() },
  });
}

type Answers = Parameters<typeof fakeClient>[0];

/** fakeClient's answers complete at once, and urql then forgets a query's error (the end of the
 * stream counts as a new result without one): like the real client, keep query streams open. */
export function keepQueriesOpen(client: Client): Client {
  const fake = client as unknown as Record<string, (...args: never[]) => unknown>;
  const executeQuery = fake.executeQuery;
  return {
    ...fake,
    executeQuery: (...args: never[]) => concat([executeQuery(...args) as never, never]),
  } as unknown as Client;
}

/** Renders studio routes (relative to /p/:project) at `path`, signed in as ME_ADMIN. */
export function renderStudio(path: string, routes: { path: string; element: ReactElement }[], answers: Answers = {}) {
  const fake = fakeClient({ Me: ME_ADMIN, ...answers });
  const view = renderPage(
    <AuthProvider>
      <Routes>
        {routes.map((r) => (
          <Route key={r.path} path={r.path} element={r.element} />
        ))}
      </Routes>
    </AuthProvider>,
    { client: keepQueriesOpen(fake.client), path },
  );
  return { ...fake, view };
}

/** The variables of the last call of an operation. */
export function lastCall(calls: { name: string; variables: Record<string, unknown> }[], name: string) {
  const found = calls.filter((c) => c.name === name);
  return found[found.length - 1]?.variables;
}
