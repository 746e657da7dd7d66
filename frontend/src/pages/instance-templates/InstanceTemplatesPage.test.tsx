import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { InstanceTemplatesPage } from "./InstanceTemplatesPage";
import { meAnswer } from "./testing";

function template(name: string, extra: Record<string, unknown> = {}) {
  return {
    id: `t-${name}`,
    name,
    displayName: name.toUpperCase(),
    description: null,
    vendor: "NVIDIA",
    image: `${name}:1`,
    imagePullPolicy: "IF_NOT_PRESENT",
    command: [],
    containerDisk: "15Gi",
    mountPath: "/workspace",
    ports: [{ name: "jupyter", port: 8888, protocol: "TCP", accessParams: [] }],
    env: [],
    builtIn: false,
    createdAt: "2025-01-01T00:00:00Z",
    updatedAt: "2025-01-01T00:00:00Z",
    project: { id: "p1", name: "ml", displayName: "ML" },
    ...extra,
  };
}

const TEMPLATES = [
  template("jupyterlab-pytorch", { builtIn: true, project: null }),
  template("shared", { project: null, vendor: "AMD" }),
  template("mine", { vendor: "CPU", ports: [] }),
];

function render(isPlatformAdmin: boolean, answers: Parameters<typeof fakeClient>[0] = {}) {
  const fake = fakeClient({ Me: meAnswer(isPlatformAdmin), InstanceTemplatesList: { data: { instanceTemplates: TEMPLATES } }, ...answers });
  renderPage(
    <AuthProvider>
      <InstanceTemplatesPage />
    </AuthProvider>,
    { client: fake.client, path: "/p/ml/studio/instance-templates", pattern: "/p/:project/studio/instance-templates" },
  );
  return fake;
}

describe("instance templates list", () => {
  it("marks built-in and global templates, and explains why some cannot be deleted", async () => {
    render(false);
    const builtIn = await screen.findByTestId("template-jupyterlab-pytorch");
    expect(within(builtIn).getByText("Built-in")).toBeInTheDocument();
    expect(within(builtIn).getByText("Global")).toBeInTheDocument();
    expect(within(builtIn).getByText("jupyter 8888/TCP")).toBeInTheDocument();
    expect(within(builtIn).getByRole("button", { name: "Delete JUPYTERLAB-PYTORCH" })).toHaveAttribute("aria-disabled", "true");
    expect(within(builtIn).getByRole("link", { name: "View JUPYTERLAB-PYTORCH" })).toBeInTheDocument();

    const shared = screen.getByTestId("template-shared");
    expect(within(shared).getByRole("button", { name: "Delete SHARED" })).toHaveAttribute("aria-disabled", "true");
    const mine = screen.getByTestId("template-mine");
    expect(within(mine).getByText("CPU")).toBeInTheDocument();
    expect(within(mine).getByRole("button", { name: "Delete MINE" })).not.toHaveAttribute("aria-disabled");
    expect(within(mine).getByRole("link", { name: "Edit MINE" })).toHaveAttribute(
      "href",
      "/p/ml/studio/instance-templates/t-mine/edit",
    );
  });

  it("lets platform admins edit built-in templates, but still not delete them", async () => {
    render(true);
    const builtIn = await screen.findByTestId("template-jupyterlab-pytorch");
    expect(within(builtIn).getByRole("link", { name: "Edit JUPYTERLAB-PYTORCH" })).toBeInTheDocument();
    expect(within(builtIn).getByRole("button", { name: "Delete JUPYTERLAB-PYTORCH" })).toHaveAttribute("aria-disabled", "true");
    expect(within(screen.getByTestId("template-shared")).getByRole("button", { name: "Delete SHARED" })).not.toHaveAttribute(
      "aria-disabled",
    );
  });

  it("filters by search and vendor through the API", async () => {
    const { calls } = render(false);
    await screen.findByTestId("template-mine");
    fireEvent.click(screen.getByRole("radio", { name: "AMD" }));
    await waitFor(() =>
      expect(calls.filter((c) => c.name === "InstanceTemplatesList").at(-1)?.variables).toEqual({
        project: "ml",
        search: null,
        vendor: "AMD",
      }),
    );
    fireEvent.change(screen.getByRole("textbox", { name: "Search" }), { target: { value: "jup" } });
    await waitFor(() =>
      expect(calls.filter((c) => c.name === "InstanceTemplatesList").at(-1)?.variables).toEqual({
        project: "ml",
        search: "jup",
        vendor: "AMD",
      }),
    );
  });

  it("deletes a project template after confirmation", async () => {
    const { calls } = render(false, {
      InstanceTemplateDelete: { data: { deleteInstanceTemplate: { deletedId: "t-mine", userErrors: [] } } },
    });
    const mine = await screen.findByTestId("template-mine");
    fireEvent.click(within(mine).getByRole("button", { name: "Delete MINE" }));
    const dialog = await screen.findByRole("dialog");
    fireEvent.click(within(dialog).getByRole("button", { name: "Delete" }));
    await waitFor(() => expect(calls.find((c) => c.name === "InstanceTemplateDelete")?.variables).toEqual({ id: "t-mine" }));
  });
});
