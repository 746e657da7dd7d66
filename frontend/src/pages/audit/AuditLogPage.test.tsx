import { fireEvent, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { meAnswer } from "../instance-templates/testing";
import { AuditLogPage, apiFilter } from "./AuditLogPage";

function entry(id: string, overrides: Record<string, unknown> = {}) {
  return {
    id,
    at: "2026-12-01T10:00:00Z",
    actorKind: "USER",
    actorName: "alice",
    address: "10.1.2.3",
    credentialKind: "TOKEN",
    credentialName: "ci",
    action: "updateComputeProfile",
    objectType: "ComputeProfile",
    objectId: "p1",
    objectName: "a100-small",
    project: "ml",
    outcome: "SUCCESS",
    errorCode: null,
    errorMessage: null,
    changes: [
      { field: "display_name", before: '"Small"', after: '"A100 small"' },
      { field: "input_settings", before: '[{"value":"[redacted]"}]', after: '[{"value":"[redacted]"}]' },
    ],
    ...overrides,
  };
}

function page(edges: ReturnType<typeof entry>[], hasNextPage: boolean, endCursor: string | null, totalCount = 3) {
  return { data: { auditLog: { totalCount, pageInfo: { hasNextPage, endCursor }, edges: edges.map((node) => ({ node })) } } };
}

function render(platformAdmin: boolean) {
  const fake = fakeClient({
    Me: meAnswer(platformAdmin),
    AuditLog: (variables) =>
      variables.after === "c2"
        ? page([entry("e3", { action: "deleteComputeInstance", outcome: "REFUSED", errorCode: "FORBIDDEN", errorMessage: "Only the owner may.", changes: [] })], false, "c3")
        : page([entry("e1"), entry("e2", { action: "deployComputeInstance", objectType: "ComputeInstance", objectName: "nb" })], true, "c2"),
  });
  renderPage(
    <AuthProvider>
      <AuditLogPage />
    </AuthProvider>,
    { client: fake.client, path: "/p/ml/studio/audit", pattern: "/p/:project/studio/audit" },
  );
  return fake;
}

describe("audit log", () => {
  it("builds the API's filter from the form, days inclusive", () => {
    expect(apiFilter({ actor: " bob ", action: "", objectType: "", outcome: "REFUSED", since: "2026-12-01", until: "2026-12-02" }, "ml")).toEqual({
      project: "ml",
      actor: "bob",
      outcome: "REFUSED",
      since: "2026-12-01T00:00:00Z",
      until: "2026-12-03T00:00:00.000Z",
    });
    expect(apiFilter({ actor: "", action: "", objectType: "", outcome: null, since: "", until: "" }, null)).toEqual({});
  });

  it("shows a project admin their project's entries, each one's diff, and pages", async () => {
    const { calls } = render(false);
    expect(await screen.findByText("a100-small")).toBeInTheDocument();
    expect(screen.queryByRole("radiogroup", { name: "Scope" })).not.toBeInTheDocument();
    expect(calls.find((c) => c.name === "AuditLog")?.variables).toMatchObject({ filter: { project: "ml" }, first: 25, after: null });
    expect(within(screen.getByTestId("audit-e1")).getByText("API token ci")).toBeInTheDocument();

    // the diff of an entry
    fireEvent.click(within(screen.getByTestId("audit-e1")).getByRole("button", { name: "Show the changes" }));
    const changes = screen.getByRole("table", { name: "Changes" });
    expect(within(changes).getByText("display_name")).toBeInTheDocument();
    expect(within(changes).getByText('"A100 small"')).toBeInTheDocument();
    expect(within(changes).getAllByText('[{"value":"[redacted]"}]')).toHaveLength(2);

    // older entries, then back
    fireEvent.click(screen.getByRole("button", { name: "Older" }));
    expect(await screen.findByText("REFUSED FORBIDDEN")).toBeInTheDocument();
    expect(calls.filter((c) => c.name === "AuditLog").at(-1)?.variables).toMatchObject({ after: "c2" });
    expect(screen.getByRole("button", { name: "Older" })).toBeDisabled();
    fireEvent.click(screen.getByRole("button", { name: "Newer" }));
    expect(await screen.findByText("a100-small")).toBeInTheDocument();
  });

  it("filters, and lets platform admins read every project", async () => {
    const { calls } = render(true);
    expect(await screen.findByText("a100-small")).toBeInTheDocument();
    fireEvent.change(screen.getByLabelText("Actor"), { target: { value: "bob" } });
    fireEvent.change(screen.getByLabelText("Action"), { target: { value: "deployComputeInstance" } });
    fireEvent.click(screen.getByRole("button", { name: "Apply" }));
    expect(calls.filter((c) => c.name === "AuditLog").at(-1)?.variables).toMatchObject({
      filter: { project: "ml", actor: "bob", action: "deployComputeInstance" },
      after: null,
    });
    fireEvent.click(screen.getByText("All projects"));
    expect(calls.filter((c) => c.name === "AuditLog").at(-1)?.variables).toMatchObject({
      filter: { actor: "bob", action: "deployComputeInstance" },
    });
    expect(calls.filter((c) => c.name === "AuditLog").at(-1)?.variables?.filter).not.toHaveProperty("project");
  });
});
