import { fireEvent, screen, waitFor } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { EditInstancePage } from "./EditInstancePage";
import { actions, auth, project, RUN_UNDER_WAY, stubFonts } from "./testData";

stubFonts();

const definition = (name: string, type: string, extra: Record<string, unknown> = {}) => ({
  name,
  type,
  description: null,
  required: false,
  default: null,
  options: [],
  pattern: null,
  min: null,
  max: null,
  sensitive: false,
  ...extra,
});

function editForm(status = "SUCCESS") {
  return {
    data: {
      computeInstance: {
        id: "ci-1",
        name: "trainer",
        displayName: "Trainer",
        description: null,
        status,
        updatedAt: "2025-03-01T10:00:00+00:00",
        outdated: false,
        profileName: "a100-large",
        // What the API says may be done now: a run under way refuses Deploy.
        actions: status === "IN_PROGRESS" ? actions(RUN_UNDER_WAY) : actions(),
        labels: [{ key: "team", value: "ml" }],
        annotations: [],
        inputs: [
          { key: "replicas", value: "2" },
          { key: "region", value: "eu-west" },
          { key: "token", value: "********" },
        ],
        project,
        profile: {
          id: "prof-1",
          displayName: "A100 Large",
          inputSettings: [
            { name: "replicas", value: "1", required: false, override: "ALLOWED", allowedValues: [] },
            { name: "region", value: "eu-west", required: true, override: "NOT_ALLOWED", allowedValues: [] },
            { name: "token", value: null, required: false, override: "ALLOWED", allowedValues: [] },
          ],
          environmentTemplateVersion: {
            id: "v1",
            inputs: [definition("replicas", "NUMBER"), definition("region", "STRING"), definition("token", "STRING", { sensitive: true })],
          },
        },
      },
    },
  };
}

const updated = {
  data: {
    updateComputeInstance: {
      computeInstance: {
        id: "ci-1",
        displayName: "Trainer",
        description: null,
        status: "SUCCESS",
        updatedAt: "2025-03-01T11:00:00+00:00",
        labels: [],
        annotations: [],
        inputs: [],
      },
      userErrors: [],
    },
  },
};

function setup(answers: Parameters<typeof fakeClient>[0]) {
  const fake = fakeClient({ ...auth, ...answers });
  renderPage(
    <AuthProvider>
      <EditInstancePage />
    </AuthProvider>,
    { client: fake.client, path: "/p/ml/instances/ci-1/edit", pattern: "/p/:project/instances/:id/edit" },
  );
  return fake;
}

const sent = (calls: { name: string; variables: Record<string, unknown> }[], name: string) => calls.find((c) => c.name === name)?.variables;

describe("EditInstancePage", () => {
  it("edits only the inputs users may override, and keeps inputs out of Save Changes when unchanged", async () => {
    const { calls } = setup({ InstanceEditForm: editForm(), InstanceUpdate: updated });
    await screen.findByRole("heading", { name: "Edit Configuration" });
    expect(screen.getByRole("textbox", { name: "replicas" })).toHaveValue("2");
    expect(screen.queryByRole("textbox", { name: /region/ })).toBeNull();
    expect(screen.getByRole("table", { name: "Set by the profile" })).toHaveTextContent("eu-west");
    // A hidden value starts empty: the mask is never sent back.
    expect(screen.getByLabelText("token")).toHaveValue("");

    fireEvent.change(screen.getByLabelText("Labels 1 value"), { target: { value: "research" } });
    fireEvent.click(screen.getByRole("button", { name: "Save Changes" }));
    await waitFor(() => expect(sent(calls, "InstanceUpdate")).toBeDefined());
    expect(sent(calls, "InstanceUpdate")).toEqual({
      input: {
        id: "ci-1",
        displayName: "Trainer",
        description: "",
        labels: [{ key: "team", value: "research" }],
        annotations: [],
        inputs: null,
      },
    });
    expect(calls.some((c) => c.name === "InstanceDeploy")).toBe(false);
  });

  it("Deploy saves the changed inputs, then deploys; errors show next to the input", async () => {
    const { calls } = setup({
      InstanceEditForm: editForm(),
      InstanceUpdate: (variables) => {
        const inputs = (variables as { input: { inputs: { key: string; value: string }[] } }).input.inputs;
        return inputs[0].value === "9"
          ? { data: { updateComputeInstance: { computeInstance: null, userErrors: [{ field: ["input", "inputs", "0", "value"], message: 'input "replicas" must be at most 4', code: "INVALID" }] } } }
          : updated;
      },
      InstanceDeploy: {
        data: { deployComputeInstance: { computeInstance: { id: "ci-1", status: "WAITING", statusMessage: null, updatedAt: "2025-03-01T11:00:00+00:00" }, userErrors: [] } },
      },
    });
    await screen.findByRole("heading", { name: "Edit Configuration" });
    const replicas = screen.getByRole("textbox", { name: "replicas" });
    fireEvent.change(replicas, { target: { value: "9" } });
    fireEvent.click(screen.getByRole("button", { name: "Deploy" }));
    await waitFor(() => expect(replicas).toHaveAccessibleDescription(/must be at most 4/));
    expect(calls.some((c) => c.name === "InstanceDeploy")).toBe(false);

    fireEvent.change(replicas, { target: { value: "3" } });
    fireEvent.click(screen.getByRole("button", { name: "Deploy" }));
    await waitFor(() => expect(sent(calls, "InstanceDeploy")).toEqual({ id: "ci-1" }));
    const updates = calls.filter((c) => c.name === "InstanceUpdate");
    expect((updates[1].variables as { input: { inputs: unknown } }).input.inputs).toEqual([{ key: "replicas", value: "3" }]);
  });

  it("says why the API refuses Deploy while a run is under way", async () => {
    setup({ InstanceEditForm: editForm("IN_PROGRESS") });
    await screen.findByRole("heading", { name: "Edit Configuration" });
    const deploy = screen.getByRole("button", { name: "Deploy" });
    expect(deploy).toHaveAttribute("aria-disabled", "true");
    expect(deploy).toHaveAccessibleDescription(RUN_UNDER_WAY.DEPLOY);
    expect(screen.getByRole("button", { name: "Save Changes" })).not.toBeDisabled();
  });
});
