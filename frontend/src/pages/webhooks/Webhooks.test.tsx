import { notifications } from "@mantine/notifications";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { AuthProvider } from "../../app/auth";
import { AdminOnly } from "../../app/Layout";
import { fakeClient, renderPage } from "../../test/render";
import { meAnswer } from "../instance-templates/testing";
import { WebhookPage } from "./WebhookPage";
import { WebhooksPage } from "./WebhooksPage";

const HOOK = {
  id: "w1",
  url: "https://hooks.example.com/gpupaas",
  events: ["COMPUTE_INSTANCE_FAILED", "QUOTA_REACHED"],
  enabled: true,
  createdAt: "2026-01-01T00:00:00Z",
  updatedAt: "2026-01-01T00:00:00Z",
};

function render(ui: React.ReactElement, path: string, pattern: string, answers: Parameters<typeof fakeClient>[0] = {}, role: "ADMIN" | "MEMBER" = "ADMIN") {
  const fake = fakeClient({ Me: meAnswer(false, role), ...answers });
  renderPage(<AuthProvider>{ui}</AuthProvider>, { client: fake.client, path, pattern });
  return fake;
}

describe("webhooks", () => {
  beforeEach(() => {
    vi.spyOn(notifications, "show").mockImplementation(() => "");
  });
  afterEach(() => vi.restoreAllMocks());

  it("is for the project's admins only", async () => {
    render(
      <AdminOnly>
        <WebhooksPage />
      </AdminOnly>,
      "/p/ml/studio/webhooks",
      "/p/:project/studio/webhooks",
      {},
      "MEMBER",
    );
    expect(await screen.findByText(/Only the project's admins may open the studio/)).toBeInTheDocument();
  });

  it("adds a webhook with its events and shows the secret once", async () => {
    const { calls } = render(<WebhooksPage />, "/p/ml/studio/webhooks", "/p/:project/studio/webhooks", {
      WebhooksList: { data: { webhooks: [] } },
      WebhookCreate: (variables) => {
        const input = variables.input as { url: string };
        if (input.url.startsWith("http://10.")) {
          return {
            data: {
              createWebhook: {
                webhook: null,
                secret: null,
                userErrors: [{ field: ["input", "url"], message: "10.0.0.1 is a private address: not allowed", code: "INVALID" }],
              },
            },
          };
        }
        return { data: { createWebhook: { webhook: HOOK, secret: "whsec_abc123", userErrors: [] } } };
      },
    });
    expect(await screen.findByText("No webhooks yet")).toBeInTheDocument();
    fireEvent.click(screen.getAllByRole("button", { name: "Add Webhook" })[0]);
    const url = await screen.findByRole("textbox", { name: /URL/ });
    fireEvent.change(url, { target: { value: "http://10.0.0.1/x" } });
    fireEvent.click(screen.getByRole("checkbox", { name: /Service instance failed/ })); // off
    fireEvent.click(screen.getByRole("checkbox", { name: /Quota reached/ })); // on
    const dialog = screen.getByRole("dialog");
    fireEvent.click(within(dialog).getByRole("button", { name: "Add Webhook" }));
    // the server's refusal is shown at the URL field
    expect(await screen.findByText("10.0.0.1 is a private address: not allowed")).toBeInTheDocument();
    fireEvent.change(url, { target: { value: " https://hooks.example.com/gpupaas " } });
    fireEvent.click(within(dialog).getByRole("button", { name: "Add Webhook" }));
    expect(await screen.findByTestId("webhook-secret")).toHaveTextContent("whsec_abc123");
    expect(screen.getByText("Copy the signing secret now")).toBeInTheDocument();
    const created = calls.filter((c) => c.name === "WebhookCreate").map((c) => c.variables.input);
    expect(created[1]).toEqual({
      project: "ml",
      url: "https://hooks.example.com/gpupaas",
      events: ["COMPUTE_INSTANCE_FAILED", "QUOTA_REACHED"],
      enabled: true,
    });
    // once closed, the secret is gone from the page
    fireEvent.click(screen.getByRole("button", { name: "Done" }));
    await waitFor(() => expect(screen.queryByTestId("webhook-secret")).not.toBeInTheDocument());
  });

  it("switches a webhook off, sends it a test event and deletes it", async () => {
    const { calls } = render(<WebhooksPage />, "/p/ml/studio/webhooks", "/p/:project/studio/webhooks", {
      WebhooksList: { data: { webhooks: [HOOK] } },
      WebhookUpdate: { data: { updateWebhook: { webhook: { ...HOOK, enabled: false }, userErrors: [] } } },
      WebhookTest: { data: { sendWebhookTestEvent: { delivery: { id: "d1", status: "PENDING" }, userErrors: [] } } },
      WebhookDelete: { data: { deleteWebhook: { deletedId: "w1", userErrors: [] } } },
    });
    const row = await screen.findByTestId("webhook-w1");
    expect(within(row).getByText("Compute instance failed")).toBeInTheDocument();
    fireEvent.click(within(row).getByRole("switch", { name: `Enabled: ${HOOK.url}` }));
    await waitFor(() => expect(calls.find((c) => c.name === "WebhookUpdate")?.variables).toEqual({ input: { id: "w1", enabled: false } }));
    fireEvent.click(within(row).getByRole("button", { name: `Send a test event to ${HOOK.url}` }));
    await waitFor(() => expect(calls.find((c) => c.name === "WebhookTest")?.variables).toEqual({ id: "w1" }));
    await waitFor(() => expect(notifications.show).toHaveBeenCalledWith(expect.objectContaining({ title: "Test event queued" })));
    fireEvent.click(within(row).getByRole("button", { name: "Delete" }));
    fireEvent.click(within(await screen.findByRole("dialog")).getByRole("button", { name: "Delete" }));
    await waitFor(() => expect(calls.find((c) => c.name === "WebhookDelete")?.variables).toEqual({ id: "w1" }));
  });

  it("shows the delivery log with each attempt", async () => {
    render(<WebhookPage />, "/p/ml/studio/webhooks/w1", "/p/:project/studio/webhooks/:id", {
      WebhookLog: {
        data: {
          webhook: {
            ...HOOK,
            deliveries: {
              totalCount: 1,
              pageInfo: { hasNextPage: false, endCursor: "c1" },
              edges: [
                {
                  node: {
                    id: "d1",
                    event: "TEST",
                    eventId: "e1",
                    status: "DELIVERED",
                    attemptCount: 2,
                    nextAttemptAt: null,
                    lastError: null,
                    createdAt: "2026-01-01T00:00:00Z",
                    finishedAt: "2026-01-01T00:00:10Z",
                    attempts: [
                      { number: 1, startedAt: "2026-01-01T00:00:00Z", durationMs: 12, statusCode: null, error: "refused: 10.0.0.1 is a private address", responseExcerpt: null },
                      { number: 2, startedAt: "2026-01-01T00:00:10Z", durationMs: 34, statusCode: 200, error: null, responseExcerpt: "thanks" },
                    ],
                  },
                },
              ],
            },
          },
        },
      },
    });
    expect(await screen.findByText("Delivery log (1)")).toBeInTheDocument();
    const delivery = screen.getByTestId("delivery-d1");
    expect(within(delivery).getByText("Delivered")).toBeInTheDocument();
    expect(within(delivery).getByText("Test event")).toBeInTheDocument();
    fireEvent.click(within(delivery).getByRole("button", { name: /Delivered/ }));
    expect(await within(delivery).findByText("refused: 10.0.0.1 is a private address")).toBeInTheDocument();
    expect(within(delivery).getByText("HTTP 200")).toBeInTheDocument();
    expect(within(delivery).getByText("thanks")).toBeInTheDocument();
    expect(within(delivery).getByText("34 ms")).toBeInTheDocument();
  });

  it("makes a new secret and shows it once", async () => {
    const { calls } = render(<WebhookPage />, "/p/ml/studio/webhooks/w1", "/p/:project/studio/webhooks/:id", {
      WebhookLog: { data: { webhook: { ...HOOK, deliveries: { totalCount: 0, pageInfo: { hasNextPage: false, endCursor: null }, edges: [] } } } },
      WebhookRotate: { data: { rotateWebhookSecret: { webhook: HOOK, secret: "whsec_new", userErrors: [] } } },
    });
    expect(await screen.findByText("Nothing sent yet")).toBeInTheDocument();
    fireEvent.click(screen.getByRole("button", { name: "New secret" }));
    fireEvent.click(within(await screen.findByRole("dialog")).getByRole("button", { name: "Make a new secret" }));
    expect(await screen.findByTestId("webhook-secret")).toHaveTextContent("whsec_new");
    expect(calls.find((c) => c.name === "WebhookRotate")?.variables).toEqual({ id: "w1" });
  });
});
