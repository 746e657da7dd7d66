import { notifications } from "@mantine/notifications";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { meAnswer } from "../instance-templates/testing";
import { ServiceDetailPage } from "./ServiceDetailPage";

const SERVICE = {
  id: "s1",
  name: "lab",
  displayName: "My lab",
  templateName: "jupyterlab-pytorch",
  gpuCount: 1,
  status: "STARTING",
  statusMessage: "pulling the image",
  createdAt: "2025-01-01T00:00:00Z",
  updatedAt: "2025-01-01T00:00:00Z",
  connect: [],
  actions: [
    { name: "START", allowed: false, reason: "cannot start while the service instance is STARTING: wait until the current step finishes" },
    { name: "STOP", allowed: false, reason: "cannot stop while the service instance is STARTING: wait until the current step finishes" },
    { name: "RESTART", allowed: false, reason: "cannot restart while the service instance is STARTING: wait until the current step finishes" },
    { name: "DELETE", allowed: true, reason: null },
  ],
  template: { id: "t1", displayName: "JupyterLab", vendor: "NVIDIA" },
  computeInstance: {
    id: "c1",
    name: "box",
    displayName: "Box",
    status: "SUCCESS",
    resources: { gpuCount: 2, gpuVendor: "NVIDIA", gpuModel: "A100" },
    cluster: { id: "k1", name: "simulated", displayName: "Simulated cluster" },
  },
  image: "nvcr.io/nvidia/pytorch:25.01-py3",
  imagePullPolicy: "IF_NOT_PRESENT",
  gpuPartition: "nvidia.com/mig-1g.10gb",
  imagePullSecret: "ngc",
  command: ["jupyter", "lab", "--ServerApp.token={{generated_token}}"],
  containerDisk: "15Gi",
  mountPath: "/workspace",
  ports: [{ name: "jupyter", port: 8888, protocol: "TCP", accessParams: [{ key: "token", value: "{{generated_token}}" }] }],
  env: [{ key: "HF_HOME", value: "/workspace/.cache/huggingface" }],
  project: { name: "ml" },
  owner: { username: "alice" },
  editRefusal: "cannot edit a service instance that is STARTING: stop it first (a STOPPED or FAILED one is edited, and its changes apply at its next start)",
  storage: { mode: "NEW_VOLUME", size: "40Gi", reclaim: "KEEP", claimName: null, storageClass: null },
  resources: { cpuRequest: "2", cpuLimit: "4", memoryRequest: null, memoryLimit: null },
};

describe("service page", () => {
  it("shows the spec, and the status and Connect links live", async () => {
    const { client, calls } = fakeClient({
      Me: meAnswer(false, "MEMBER"),
      ServiceDetail: { data: { serviceInstance: SERVICE } },
      ServiceStatusLive: {
        data: {
          serviceInstanceStatus: {
            status: "RUNNING",
            message: null,
            at: "2025-01-01T00:02:00Z",
            instance: {
              id: "s1",
              status: "RUNNING",
              statusMessage: null,
              updatedAt: "2025-01-01T00:02:00Z",
              connect: [{ port: "jupyter", url: "http://127.0.0.1:31888/?token=abc" }],
              // The event carries what may be done now that it runs.
              actions: [
                { name: "START", allowed: false, reason: "cannot start a service instance that is RUNNING: it is already running" },
                { name: "STOP", allowed: true, reason: null },
                { name: "RESTART", allowed: true, reason: null },
                { name: "DELETE", allowed: true, reason: null },
              ],
            },
          },
        },
      },
    });
    renderPage(
      <AuthProvider>
        <ServiceDetailPage />
      </AuthProvider>,
      { client, path: "/p/ml/services/s1", pattern: "/p/:project/services/:id" },
    );
    expect(await screen.findByRole("heading", { name: "My lab" })).toBeInTheDocument();
    expect(screen.getByText(/--ServerApp.token=\{\{generated_token\}\}/)).toBeInTheDocument();
    expect(screen.getByText("nvidia.com/mig-1g.10gb")).toBeInTheDocument();
    expect(screen.getByText("ngc")).toBeInTheDocument();
    expect(screen.getByRole("link", { name: "Box" })).toHaveAttribute("href", "/p/ml/instances/c1");
    await waitFor(() => expect(screen.getByRole("link", { name: /Connect to jupyter/ })).toHaveAttribute("href", "http://127.0.0.1:31888/?token=abc"));
    const header = screen.getByRole("heading", { name: "My lab" }).parentElement!;
    expect(within(header).getByText("Running")).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Stop My lab" })).not.toHaveAttribute("aria-disabled");
    expect(screen.getByRole("button", { name: "Start My lab" })).toHaveAttribute("aria-disabled", "true");
    expect(screen.getByText(/\(you\)/).closest("[data-owner]")).toHaveAttribute("data-owner", "alice");
    // its log and its events, live
    expect(screen.getByRole("region", { name: "Logs" })).toBeInTheDocument();
    expect(screen.getByRole("region", { name: "Events" })).toBeInTheDocument();
    expect(calls.find((c) => c.name === "ServiceLogsLive")?.variables).toMatchObject({ id: "s1", tailLines: 500, follow: true });
    expect(calls.find((c) => c.name === "ServiceEventsLive")?.variables).toEqual({ id: "s1" });
  });

  it("says whose it is, and that its owner gets the link's token", async () => {
    // as the API answers a member who does not own it
    const others = (verb: string) => `Only the owner or a project admin may ${verb} service instance "lab".`;
    const { client } = fakeClient({
      Me: meAnswer(false, "MEMBER"),
      ServiceDetail: {
        data: {
          serviceInstance: {
            ...SERVICE,
            status: "RUNNING",
            statusMessage: null,
            owner: { username: "bob" },
            connect: [{ port: "jupyter", url: "http://127.0.0.1:31888/" }],
            actions: ["START", "STOP", "RESTART", "DELETE"].map((name) => ({ name, allowed: false, reason: others(name.toLowerCase()) })),
          },
        },
      },
    });
    renderPage(
      <AuthProvider>
        <ServiceDetailPage />
      </AuthProvider>,
      { client, path: "/p/ml/services/s1", pattern: "/p/:project/services/:id" },
    );
    expect(await screen.findByRole("heading", { name: "My lab" })).toBeInTheDocument();
    expect(screen.getByText("bob")).toHaveAttribute("data-owner", "bob");
    expect(screen.getByText(/Its owner and the project's admins get these links with their access parameters/)).toBeInTheDocument();
    for (const name of ["Stop My lab", "Restart My lab", "Delete My lab"]) {
      expect(screen.getByRole("button", { name })).toHaveAttribute("aria-disabled", "true");
    }
  });

  it("offers no Edit while it runs, and says why", async () => {
    const { client } = fakeClient({ Me: meAnswer(false, "MEMBER"), ServiceDetail: { data: { serviceInstance: SERVICE } } });
    renderPage(
      <AuthProvider>
        <ServiceDetailPage />
      </AuthProvider>,
      { client, path: "/p/ml/services/s1", pattern: "/p/:project/services/:id" },
    );
    expect(await screen.findByRole("heading", { name: "My lab" })).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Edit" })).toBeDisabled();
    expect(screen.getByTestId("edit-refusal")).toHaveAttribute("data-reason", SERVICE.editRefusal);
    expect(screen.getByTestId("service-storage")).toHaveTextContent("New volume of 40Gi, kept on delete");
    expect(screen.getByTestId("service-resources")).toHaveTextContent("2 to 4 CPU");
  });

  it("shows the exact ssh command, the host key, and the keys added to a service with SSH access (add, delete)", async () => {
    vi.spyOn(notifications, "show").mockImplementation(() => "");
    const SHELL = {
      ...SERVICE,
      status: "RUNNING",
      statusMessage: null,
      command: ["sleep", "infinity"],
      ports: [{ name: "SSH", port: 22, protocol: "TCP", accessParams: [] }],
      connect: [{ port: "SSH", url: "ssh -p 30022 root@10.0.0.5" }],
      sshAccess: { port: "SSH", user: "root" },
      ssh: { command: "ssh -p 30022 root@10.0.0.5", hostKeyFingerprint: "SHA256:hostkey" },
      sshKeys: [{ id: "k1", name: "ci", keyType: "ssh-ed25519", fingerprint: "SHA256:ci", createdAt: "2025-01-01T00:00:00Z" }],
    };
    const { client, calls } = fakeClient({
      Me: meAnswer(false, "MEMBER"),
      ServiceDetail: { data: { serviceInstance: SHELL } },
      ServiceSshKeyAdd: (variables) => {
        const input = variables.input as { service: string; publicKey: string; name: string | null };
        if (input.name === "ci") {
          return { data: { addServiceInstanceSshKey: { sshKey: null, userErrors: [{ field: ["input", "name"], message: 'the service already has a key named "ci"', code: "TAKEN" }] } } };
        }
        return { data: { addServiceInstanceSshKey: { sshKey: { id: "k2", name: input.name ?? "bob@desk", fingerprint: "SHA256:bob" }, userErrors: [] } } };
      },
      ServiceSshKeyDelete: { data: { deleteServiceInstanceSshKey: { deletedId: "k1", userErrors: [] } } },
    });
    renderPage(
      <AuthProvider>
        <ServiceDetailPage />
      </AuthProvider>,
      { client, path: "/p/ml/services/s1", pattern: "/p/:project/services/:id" },
    );
    expect(await screen.findByRole("heading", { name: "My lab" })).toBeInTheDocument();
    expect(screen.getByLabelText("SSH ssh command")).toHaveTextContent(/^ssh -p 30022 root@10\.0\.0\.5$/);
    const panel = screen.getByTestId("ssh-panel");
    expect(within(panel).getByText("SHA256:hostkey")).toBeInTheDocument();
    expect(within(screen.getByTestId("service-ssh-key-ci")).getByText("SHA256:ci")).toBeInTheDocument();

    const key = within(panel).getByLabelText(/^Add a key to this service/);
    const name = within(panel).getByLabelText(/^Key name/);
    fireEvent.change(key, { target: { value: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG4rT3vTt99Ox5kndS4HmgTrKBT8SKzhK4rhGkEVGlCI bob@desk" } });
    fireEvent.change(name, { target: { value: "ci" } });
    fireEvent.click(within(panel).getByRole("button", { name: "Add key" }));
    await waitFor(() => expect(name).toHaveAccessibleDescription(expect.stringContaining('the service already has a key named "ci"')));
    fireEvent.change(name, { target: { value: "" } });
    fireEvent.click(within(panel).getByRole("button", { name: "Add key" }));
    await waitFor(() => expect(notifications.show).toHaveBeenCalledWith(expect.objectContaining({ title: "SSH key added" })));
    expect(calls.filter((c) => c.name === "ServiceSshKeyAdd").at(-1)?.variables).toEqual({
      input: { service: "s1", publicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG4rT3vTt99Ox5kndS4HmgTrKBT8SKzhK4rhGkEVGlCI bob@desk", name: null },
    });
    expect(key).toHaveValue("");

    fireEvent.click(within(screen.getByTestId("service-ssh-key-ci")).getByRole("button", { name: "Delete ci" }));
    const confirm = await screen.findByRole("dialog", { name: 'Delete the key "ci" from this service?' });
    fireEvent.click(within(confirm).getByRole("button", { name: "Delete" }));
    await waitFor(() => expect(calls.find((c) => c.name === "ServiceSshKeyDelete")?.variables).toEqual({ id: "k1" }));
    vi.restoreAllMocks();
  });

  it("shows no SSH part for a service without SSH access", async () => {
    const { client } = fakeClient({ Me: meAnswer(false, "MEMBER"), ServiceDetail: { data: { serviceInstance: { ...SERVICE, sshAccess: null, ssh: null, sshKeys: [] } } } });
    renderPage(
      <AuthProvider>
        <ServiceDetailPage />
      </AuthProvider>,
      { client, path: "/p/ml/services/s1", pattern: "/p/:project/services/:id" },
    );
    expect(await screen.findByRole("heading", { name: "My lab" })).toBeInTheDocument();
    expect(screen.queryByTestId("ssh-panel")).not.toBeInTheDocument();
  });

  it("edits a stopped service, and shows the server's refusal next to the field", async () => {
    const refusal =
      "the service's own volume holds its workspace: it cannot become EPHEMERAL (its data would be lost); keep NEW_VOLUME, or make a new service instance";
    const stopped = { ...SERVICE, status: "STOPPED", statusMessage: null, editRefusal: null };
    const { client, calls } = fakeClient({
      Me: meAnswer(false, "MEMBER"),
      ServiceDetail: { data: { serviceInstance: stopped } },
      ServiceUpdate: (variables) => {
        const input = variables.input as { storage: { mode: string } };
        return input.storage.mode === "EPHEMERAL"
          ? { data: { updateServiceInstance: { serviceInstance: null, userErrors: [{ field: ["input", "storage", "mode"], message: refusal, code: "IMMUTABLE" }] } } }
          : { data: { updateServiceInstance: { serviceInstance: { ...stopped, command: ["sleep", "infinity"] }, userErrors: [] } } };
      },
    });
    renderPage(
      <AuthProvider>
        <ServiceDetailPage />
      </AuthProvider>,
      { client, path: "/p/ml/services/s1", pattern: "/p/:project/services/:id" },
    );
    await screen.findByRole("heading", { name: "My lab" });
    fireEvent.click(screen.getByRole("button", { name: "Edit" }));
    const dialog = await screen.findByRole("dialog", { name: "Edit My lab" });
    fireEvent.change(within(dialog).getByRole("textbox", { name: "CPU limit" }), { target: { value: "6" } });
    fireEvent.click(within(dialog).getByRole("radio", { name: "Ephemeral" }));
    fireEvent.click(within(dialog).getByRole("button", { name: "Save" }));
    expect(await within(dialog).findByText(refusal)).toBeInTheDocument();
    const sent = calls.find((c) => c.name === "ServiceUpdate")!.variables.input as Record<string, unknown>;
    expect(sent).toMatchObject({
      id: "s1",
      gpuCount: 1,
      command: SERVICE.command,
      storage: { mode: "EPHEMERAL", size: "40Gi", reclaim: "RELEASE", claimName: null, storageClass: null },
      resources: { cpuRequest: "2", cpuLimit: "6", memoryRequest: null, memoryLimit: null },
    });
    // back to its volume, it is saved and the dialog closes
    fireEvent.click(within(dialog).getByRole("radio", { name: "New volume" }));
    fireEvent.click(within(dialog).getByRole("button", { name: "Save" }));
    await waitFor(() => expect(screen.queryByRole("dialog", { name: "Edit My lab" })).not.toBeInTheDocument());
    expect(calls.filter((c) => c.name === "ServiceUpdate")).toHaveLength(2);
  }, 20_000);
});
