import { notifications } from "@mantine/notifications";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { AuthProvider } from "../../app/auth";
import { AdminOnly } from "../../app/Layout";
import { fakeClient, renderPage } from "../../test/render";
import { meAnswer } from "../instance-templates/testing";
import { PullSecretsPage } from "./PullSecretsPage";

const NGC = { id: "s1", name: "ngc", registry: "nvcr.io", username: "$oauthtoken", updatedAt: "2026-01-01T00:00:00Z" };
const PATH = "/p/ml/studio/pull-secrets";
const PATTERN = "/p/:project/studio/pull-secrets";

function render(answers: Parameters<typeof fakeClient>[0] = {}, role: "ADMIN" | "MEMBER" = "ADMIN", ui: React.ReactElement = <PullSecretsPage />) {
  const fake = fakeClient({ Me: meAnswer(false, role), ...answers });
  renderPage(<AuthProvider>{ui}</AuthProvider>, { client: fake.client, path: PATH, pattern: PATTERN });
  return fake;
}

describe("image pull secrets", () => {
  beforeEach(() => {
    vi.spyOn(notifications, "show").mockImplementation(() => "");
  });
  afterEach(() => vi.restoreAllMocks());

  it("is for the project's admins only", async () => {
    render({}, "MEMBER", <AdminOnly><PullSecretsPage /></AdminOnly>);
    expect(await screen.findByText(/Only the project's admins may open the studio/)).toBeInTheDocument();
  });

  it("adds a secret, showing the server's refusal at its field", async () => {
    const { calls } = render({
      PullSecretsList: { data: { imagePullSecrets: [] } },
      PullSecretCreate: (variables) => {
        const input = variables.input as { registry: string };
        if (input.registry.includes("_")) {
          return { data: { createImagePullSecret: { imagePullSecret: null, userErrors: [{ field: ["input", "registry"], message: '"bad_host" is not a host name', code: "INVALID" }] } } };
        }
        return { data: { createImagePullSecret: { imagePullSecret: NGC, userErrors: [] } } };
      },
    });
    expect(await screen.findByText("No pull secrets yet")).toBeInTheDocument();
    fireEvent.click(screen.getAllByRole("button", { name: "Add Pull Secret" })[0]);
    const dialog = await screen.findByRole("dialog");
    fireEvent.change(within(dialog).getByRole("textbox", { name: /Name/ }), { target: { value: "ngc" } });
    fireEvent.change(within(dialog).getByRole("textbox", { name: /Registry/ }), { target: { value: "bad_host" } });
    fireEvent.change(within(dialog).getByRole("textbox", { name: /User/ }), { target: { value: "$oauthtoken" } });
    fireEvent.change(within(dialog).getByLabelText(/Password/), { target: { value: "key-123" } });
    fireEvent.click(within(dialog).getByRole("button", { name: "Add Pull Secret" }));
    expect(await screen.findByText('"bad_host" is not a host name')).toBeInTheDocument();
    fireEvent.change(within(dialog).getByRole("textbox", { name: /Registry/ }), { target: { value: " nvcr.io " } });
    fireEvent.click(within(dialog).getByRole("button", { name: "Add Pull Secret" }));
    await waitFor(() => expect(calls.filter((c) => c.name === "PullSecretCreate")).toHaveLength(2));
    expect(calls.filter((c) => c.name === "PullSecretCreate")[1].variables.input).toEqual({
      project: "ml",
      name: "ngc",
      registry: "nvcr.io",
      username: "$oauthtoken",
      password: "key-123",
    });
    await waitFor(() => expect(screen.queryByRole("dialog")).not.toBeInTheDocument());
  });

  it("changes a secret without sending an empty password, and says why a delete is refused", async () => {
    const { calls } = render({
      PullSecretsList: { data: { imagePullSecrets: [NGC] } },
      PullSecretUpdate: { data: { updateImagePullSecret: { imagePullSecret: { ...NGC, username: "robot" }, userErrors: [] } } },
      PullSecretDelete: {
        data: {
          deleteImagePullSecret: {
            deletedId: null,
            userErrors: [{ field: ["id"], message: 'image pull secret "ngc" is in use: templates private; choose another secret there first', code: "INVALID_STATE" }],
          },
        },
      },
    });
    const row = await screen.findByTestId("pull-secret-ngc");
    expect(within(row).getByText("nvcr.io")).toBeInTheDocument();
    fireEvent.click(within(row).getByRole("button", { name: "Change ngc" }));
    const dialog = await screen.findByRole("dialog");
    expect(within(dialog).getByRole("textbox", { name: /Name/ })).toBeDisabled();
    expect(within(dialog).getByLabelText(/Password/)).toHaveValue(""); // never shown
    fireEvent.change(within(dialog).getByRole("textbox", { name: /User/ }), { target: { value: "robot" } });
    fireEvent.click(within(dialog).getByRole("button", { name: "Save" }));
    await waitFor(() => expect(calls.find((c) => c.name === "PullSecretUpdate")?.variables).toEqual({ input: { id: "s1", registry: "nvcr.io", username: "robot" } }));
    await waitFor(() => expect(screen.queryByRole("dialog")).not.toBeInTheDocument());
    fireEvent.click(within(row).getByRole("button", { name: "Delete" }));
    fireEvent.click(within(await screen.findByRole("dialog")).getByRole("button", { name: "Delete" }));
    await waitFor(() =>
      expect(notifications.show).toHaveBeenCalledWith(expect.objectContaining({ title: "Could not delete the pull secret", message: expect.stringContaining("templates private") })),
    );
  });
});
