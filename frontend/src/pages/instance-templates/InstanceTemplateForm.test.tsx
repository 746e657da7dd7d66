import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { InstanceTemplateEditPage, InstanceTemplateNewPage } from "./InstanceTemplateFormPage";
import { meAnswer as me } from "./testing";

const TEMPLATE = {
  id: "t1",
  name: "jupyter",
  displayName: "Jupyter",
  description: "Notebooks",
  vendor: "NVIDIA",
  image: "nvcr.io/nvidia/pytorch:25.01-py3",
  imagePullPolicy: "IF_NOT_PRESENT",
  command: ["jupyter", "lab", "--ServerApp.token={{generated_token}}"],
  containerDisk: "15Gi",
  mountPath: "/workspace",
  ports: [
    {
      name: "jupyter",
      port: 8888,
      protocol: "TCP",
      accessParams: [
        { key: "token", value: "{{generated_token}}" },
        { key: "lab", value: "1" },
      ],
    },
  ],
  env: [
    { key: "HF_HOME", value: "/workspace/.cache" },
    { key: "A", value: "1" },
    { key: "B", value: "2" },
  ],
  ssh: null,
  builtIn: false,
  createdAt: "2025-01-01T00:00:00Z",
  updatedAt: "2025-01-01T00:00:00Z",
  project: { id: "p1", name: "ml", displayName: "ML" },
};

async function choose(label: string | RegExp, option: string) {
  const user = userEvent.setup();
  await user.click(screen.getByRole("combobox", { name: label }));
  // Mantine keeps the dropdown "hidden" while it transitions in.
  fireEvent.click(await screen.findByRole("option", { name: option, hidden: true }));
}

describe("instance template form", () => {
  it("sends every field on create", async () => {
    const { client, calls } = fakeClient({
      Me: me(true),
      InstanceTemplateCreate: { data: { createInstanceTemplate: { instanceTemplate: { ...TEMPLATE, id: "t9" }, userErrors: [] } } },
    });
    renderPage(
      <AuthProvider>
        <InstanceTemplateNewPage />
      </AuthProvider>,
      { client, path: "/p/ml/studio/instance-templates/new", pattern: "/p/:project/studio/instance-templates/new" },
    );
    await screen.findByRole("heading", { name: "Add Instance Template" });

    fireEvent.click(screen.getByRole("radio", { name: "Global (every project)" }));
    fireEvent.change(screen.getByRole("textbox", { name: /^Name/ }), { target: { value: "lab" } });
    fireEvent.change(screen.getByRole("textbox", { name: /^Display name/ }), { target: { value: "Lab" } });
    fireEvent.change(screen.getByRole("textbox", { name: /^Description/ }), { target: { value: "A lab" } });
    await choose(/^Vendor/, "AMD");
    fireEvent.change(screen.getByRole("textbox", { name: /^Image$|^Image \*/ }), { target: { value: "rocm/pytorch:latest" } });
    await choose(/^Image pull policy/, "Always");
    fireEvent.change(screen.getByRole("textbox", { name: /^Container disk/ }), { target: { value: "20Gi" } });
    fireEvent.change(screen.getByRole("textbox", { name: /^Mount path/ }), { target: { value: "/data" } });
    fireEvent.change(screen.getByRole("textbox", { name: /^Pull secret/ }), { target: { value: " ngc " } });

    fireEvent.click(screen.getByRole("button", { name: "Add argument" }));
    fireEvent.click(screen.getByRole("button", { name: "Add argument" }));
    fireEvent.change(screen.getByLabelText("Start command argument 1"), { target: { value: "jupyter" } });
    fireEvent.change(screen.getByLabelText("Start command argument 2"), { target: { value: "lab" } });

    fireEvent.click(screen.getByRole("button", { name: "Add port" }));
    fireEvent.change(screen.getByLabelText("Port 1 name"), { target: { value: "jupyter" } });
    fireEvent.change(screen.getByLabelText("Port 1 number"), { target: { value: "8888" } });
    await choose("Port 1 protocol", "UDP");
    fireEvent.click(screen.getByRole("button", { name: "Add port 1 access param" }));
    fireEvent.change(screen.getByLabelText("Port 1 access params 1 key"), { target: { value: "token" } });
    fireEvent.change(screen.getByLabelText("Port 1 access params 1 value"), { target: { value: "abc" } });

    fireEvent.click(screen.getByRole("button", { name: "Add environment variable" }));
    fireEvent.change(screen.getByLabelText("Environment variables 1 name"), { target: { value: "HF_HOME" } });
    fireEvent.change(screen.getByLabelText("Environment variables 1 value"), { target: { value: "/data/hf" } });

    // its services' workspace: an ephemeral 10Gi; 2 to 4 CPUs and a 16Gi memory limit
    const storage = within(screen.getByTestId("storage-editor"));
    fireEvent.click(storage.getByRole("radio", { name: "Ephemeral" }));
    fireEvent.change(storage.getByRole("textbox", { name: /Size limit/ }), { target: { value: "10Gi" } });
    expect(storage.queryByRole("textbox", { name: /Claim name/ })).not.toBeInTheDocument();
    fireEvent.change(screen.getByRole("textbox", { name: "CPU request" }), { target: { value: "2" } });
    fireEvent.change(screen.getByRole("textbox", { name: "CPU limit" }), { target: { value: "4" } });
    fireEvent.change(screen.getByRole("textbox", { name: "Memory limit" }), { target: { value: "16Gi" } });

    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(calls.some((c) => c.name === "InstanceTemplateCreate")).toBe(true));
    const sent = calls.find((c) => c.name === "InstanceTemplateCreate")!.variables;
    expect(sent).toEqual({
      input: {
        project: null,
        name: "lab",
        displayName: "Lab",
        description: "A lab",
        vendor: "AMD",
        image: "rocm/pytorch:latest",
        imagePullPolicy: "ALWAYS",
        command: ["jupyter", "lab"],
        containerDisk: "20Gi",
        mountPath: "/data",
        ports: [{ name: "jupyter", port: 8888, protocol: "UDP", accessParams: [{ key: "token", value: "abc" }] }],
        env: [{ key: "HF_HOME", value: "/data/hf" }],
        gpuPartition: "",
        imagePullSecret: "ngc",
        storage: { mode: "EPHEMERAL", size: "10Gi", reclaim: "RELEASE", claimName: null, storageClass: null },
        resources: { cpuRequest: "2", cpuLimit: "4", memoryRequest: null, memoryLimit: "16Gi" },
        ssh: null,
      },
    });
  }, 45_000); // many fields typed into, on a shared machine

  it("declares SSH access on one of its TCP ports, shows the server's message under the SSH user", async () => {
    const SHELL = {
      ...TEMPLATE,
      id: "t2",
      name: "shell",
      displayName: "Shell",
      command: ["sleep", "infinity"],
      ports: [
        { name: "web", port: 80, protocol: "TCP", accessParams: [] },
        { name: "SSH", port: 22, protocol: "TCP", accessParams: [] },
        { name: "dns", port: 53, protocol: "UDP", accessParams: [] },
      ],
      ssh: null,
    };
    const { client, calls } = fakeClient({
      Me: me(false),
      InstanceTemplateDetail: { data: { instanceTemplate: SHELL } },
      InstanceTemplateUpdate: (variables) => {
        const input = variables.input as { ssh: { port: string; user: string | null } | null };
        if (input.ssh?.user === "no body") {
          return {
            data: {
              updateInstanceTemplate: {
                instanceTemplate: null,
                userErrors: [{ field: ["input", "ssh", "user"], message: 'must be a user name like "root" or "jovyan" (lowercase letters, digits, _ and -)', code: "INVALID" }],
              },
            },
          };
        }
        return { data: { updateInstanceTemplate: { instanceTemplate: { ...SHELL, ssh: input.ssh }, userErrors: [] } } };
      },
    });
    renderPage(
      <AuthProvider>
        <InstanceTemplateEditPage />
      </AuthProvider>,
      { client, path: "/p/ml/studio/instance-templates/t2/edit", pattern: "/p/:project/studio/instance-templates/:id/edit" },
    );
    await screen.findByRole("heading", { name: "Edit Shell" });
    const user = screen.getByRole("textbox", { name: /^SSH user/ });
    expect(user).toBeDisabled(); // no SSH port chosen: no SSH server
    // only the TCP ports are offered
    const port = screen.getByRole("combobox", { name: /^SSH port/ });
    fireEvent.click(port);
    const list = await waitFor(() => {
      const found = document.getElementById(port.getAttribute("aria-controls") ?? "");
      if (!found) throw new Error("the options are not shown");
      return found;
    });
    expect(within(list).getAllByRole("option", { hidden: true }).map((o) => o.textContent)).toEqual(["web", "SSH"]);
    fireEvent.click(within(list).getByRole("option", { name: "SSH", hidden: true }));
    fireEvent.change(user, { target: { value: "no body" } });
    fireEvent.click(screen.getByRole("button", { name: "Save Changes" }));
    await waitFor(() => expect(user).toHaveAccessibleDescription(expect.stringContaining('must be a user name like "root"')));
    expect(calls.filter((c) => c.name === "InstanceTemplateUpdate").at(-1)?.variables.input).toMatchObject({ ssh: { port: "SSH", user: "no body" } });
    fireEvent.change(user, { target: { value: " jovyan " } });
    fireEvent.click(screen.getByRole("button", { name: "Save Changes" }));
    await waitFor(() => expect(calls.filter((c) => c.name === "InstanceTemplateUpdate")).toHaveLength(2));
    expect(calls.filter((c) => c.name === "InstanceTemplateUpdate").at(-1)?.variables.input).toMatchObject({ ssh: { port: "SSH", user: "jovyan" } });
  }, 20_000);

  it("removes SSH access of a template that has it: a port of \"\"", async () => {
    const SHELL = { ...TEMPLATE, command: ["sleep", "infinity"], ports: [{ name: "SSH", port: 22, protocol: "TCP", accessParams: [] }], ssh: { port: "SSH", user: "root" } };
    const { client, calls } = fakeClient({
      Me: me(false),
      InstanceTemplateDetail: { data: { instanceTemplate: SHELL } },
      InstanceTemplateUpdate: { data: { updateInstanceTemplate: { instanceTemplate: { ...SHELL, ssh: null }, userErrors: [] } } },
    });
    renderPage(
      <AuthProvider>
        <InstanceTemplateEditPage />
      </AuthProvider>,
      { client, path: "/p/ml/studio/instance-templates/t1/edit", pattern: "/p/:project/studio/instance-templates/:id/edit" },
    );
    await screen.findByRole("heading", { name: "Edit Jupyter" });
    const port = screen.getByRole("combobox", { name: /^SSH port/ });
    expect(port).toHaveValue("SSH");
    expect(screen.getByRole("textbox", { name: /^SSH user/ })).toHaveValue("root");
    // choosing the chosen port again leaves none
    fireEvent.click(port);
    const list = await waitFor(() => {
      const found = document.getElementById(port.getAttribute("aria-controls") ?? "");
      if (!found) throw new Error("the options are not shown");
      return found;
    });
    fireEvent.click(within(list).getByRole("option", { name: "SSH", hidden: true }));
    await waitFor(() => expect(port).toHaveValue(""));
    expect(screen.getByRole("textbox", { name: /^SSH user/ })).toBeDisabled();
    fireEvent.click(screen.getByRole("button", { name: "Save Changes" }));
    await waitFor(() => expect(calls.some((c) => c.name === "InstanceTemplateUpdate")).toBe(true));
    expect(calls.find((c) => c.name === "InstanceTemplateUpdate")!.variables.input).toMatchObject({ ssh: { port: "" } });
  }, 20_000);

  it("asks for the required fields before sending, and offers global scope to platform admins only", async () => {
    const { client, calls } = fakeClient({ Me: me(false) });
    renderPage(
      <AuthProvider>
        <InstanceTemplateNewPage />
      </AuthProvider>,
      { client, path: "/p/ml/studio/instance-templates/new", pattern: "/p/:project/studio/instance-templates/new" },
    );
    await screen.findByRole("heading", { name: "Add Instance Template" });
    expect(screen.getByRole("radio", { name: "Global (every project)" })).toBeDisabled();
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    expect(await screen.findByText("A name is required")).toBeInTheDocument();
    expect(screen.getByText("Choose a vendor")).toBeInTheDocument();
    expect(calls.some((c) => c.name === "InstanceTemplateCreate")).toBe(false);
  }, 20_000);

  it("places nested server errors next to the right rows", async () => {
    const { client, calls } = fakeClient({
      Me: me(false),
      InstanceTemplateDetail: { data: { instanceTemplate: TEMPLATE } },
      InstanceTemplateUpdate: {
        data: {
          updateInstanceTemplate: {
            instanceTemplate: null,
            userErrors: [
              { field: ["input", "ports", "0", "accessParams", "1", "value"], message: "param value too long", code: "INVALID" },
              { field: ["input", "env", "2", "key"], message: "bad variable name", code: "INVALID" },
              { field: ["input", "command", "1"], message: "must not be empty", code: "INVALID" },
              { field: ["input", "ports", "0", "port"], message: "port in use", code: "INVALID" },
              { field: ["input", "id"], message: "No such instance template.", code: "NOT_FOUND" },
            ],
          },
        },
      },
    });
    renderPage(
      <AuthProvider>
        <InstanceTemplateEditPage />
      </AuthProvider>,
      { client, path: "/p/ml/studio/instance-templates/t1/edit", pattern: "/p/:project/studio/instance-templates/:id/edit" },
    );
    await screen.findByRole("heading", { name: "Edit Jupyter" });
    expect(screen.getByRole("textbox", { name: /^Name/ })).toHaveAttribute("readonly");
    fireEvent.click(screen.getByRole("button", { name: "Save Changes" }));

    await screen.findByText("param value too long");
    expect(screen.getByLabelText("Port 1 access params 2 value")).toHaveAccessibleDescription(
      expect.stringContaining("param value too long"),
    );
    expect(screen.getByLabelText("Port 1 access params 1 value")).not.toHaveAttribute("aria-invalid", "true");
    expect(screen.getByLabelText("Environment variables 3 name")).toHaveAccessibleDescription(
      expect.stringContaining("bad variable name"),
    );
    expect(screen.getByLabelText("Start command argument 2")).toHaveAccessibleDescription(
      expect.stringContaining("must not be empty"),
    );
    expect(screen.getByLabelText("Port 1 number")).toHaveAccessibleDescription(expect.stringContaining("port in use"));
    // The error no field shows goes above the buttons.
    expect(within(screen.getByRole("alert")).getByText(/No such instance template/)).toBeInTheDocument();

    const sent = calls.find((c) => c.name === "InstanceTemplateUpdate")!.variables.input as Record<string, unknown>;
    expect(sent).toMatchObject({
      id: "t1",
      displayName: "Jupyter",
      description: "Notebooks",
      vendor: "NVIDIA",
      image: TEMPLATE.image,
      imagePullPolicy: "IF_NOT_PRESENT",
      command: TEMPLATE.command,
      containerDisk: "15Gi",
      mountPath: "/workspace",
      ports: TEMPLATE.ports,
      env: TEMPLATE.env,
    });
    expect(sent).not.toHaveProperty("name");
  }, 20_000);

  it("inserts {{generated_token}} at the cursor, or as a new row", async () => {
    const { client } = fakeClient({ Me: me(false), InstanceTemplateDetail: { data: { instanceTemplate: TEMPLATE } } });
    renderPage(
      <AuthProvider>
        <InstanceTemplateEditPage />
      </AuthProvider>,
      { client, path: "/p/ml/studio/instance-templates/t1/edit", pattern: "/p/:project/studio/instance-templates/:id/edit" },
    );
    await screen.findByRole("heading", { name: "Edit Jupyter" });
    expect(screen.getAllByText(/one random 32-hex-character value per service instance/).length).toBeGreaterThanOrEqual(3);

    // Into the argument being edited, at its caret.
    const arg = screen.getByLabelText("Start command argument 2") as HTMLInputElement;
    fireEvent.change(arg, { target: { value: "--key=" } });
    arg.focus();
    arg.setSelectionRange(6, 6);
    fireEvent.click(screen.getByRole("button", { name: "Insert {{generated_token}} into the start command" }));
    expect(screen.getByLabelText("Start command argument 2")).toHaveValue("--key={{generated_token}}");

    // No env field focused: a new variable with the placeholder.
    fireEvent.click(screen.getByRole("button", { name: "Insert {{generated_token}} into the environment variables" }));
    expect(screen.getByLabelText("Environment variables 4 value")).toHaveValue("{{generated_token}}");

    // Into an access param value.
    const param = screen.getByLabelText("Port 1 access params 2 value") as HTMLInputElement;
    param.focus();
    param.setSelectionRange(0, 1);
    fireEvent.click(screen.getByRole("button", { name: "Insert {{generated_token}} into port 1 access params" }));
    expect(screen.getByLabelText("Port 1 access params 2 value")).toHaveValue("{{generated_token}}");
  }, 20_000);
});
