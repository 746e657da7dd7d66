import { notifications } from "@mantine/notifications";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { meAnswer } from "../instance-templates/testing";
import { ProjectsAdminPage } from "./ProjectsAdminPage";
import { dialogsGone, ok, refused, T0 } from "./testing";

const PROJECTS = [
  { id: "p1", name: "ml", displayName: "ML", createdAt: T0, instanceCount: 2, members: [{ username: "alice" }, { username: "bob" }] },
  { id: "p2", name: "empty", displayName: "Empty", createdAt: T0, instanceCount: 0, members: [] },
  { id: "p0", name: "gpupaas-system", displayName: "Built-in", createdAt: T0, instanceCount: 0, members: [] },
];

function render(answers: Parameters<typeof fakeClient>[0] = {}) {
  const fake = fakeClient({ Me: meAnswer(true), AdminProjects: { data: { projects: PROJECTS } }, ...answers });
  renderPage(
    <AuthProvider>
      <ProjectsAdminPage />
    </AuthProvider>,
    { client: fake.client, path: "/p/ml/admin/projects", pattern: "/p/:project/admin/projects" },
  );
  return fake;
}

describe("projects (administration)", () => {
  beforeEach(() => {
    vi.spyOn(notifications, "show").mockImplementation(() => "");
  });
  afterEach(() => vi.restoreAllMocks());

  it("lists projects with their instance and member counts", async () => {
    render();
    const ml = await screen.findByTestId("project-ml");
    const cells = within(ml).getAllByRole("cell").map((c) => c.textContent);
    expect(cells.slice(0, 4)).toEqual(["ml", "ML", "2", "2"]);
    expect(within(screen.getByTestId("project-empty")).getAllByRole("cell").map((c) => c.textContent).slice(2, 4)).toEqual(["0", "0"]);
    expect(within(ml).getByRole("link", { name: "Members of ml" })).toHaveAttribute("href", "/p/ml/studio/members");
    // the built-in project is never deleted
    expect(within(screen.getByTestId("project-gpupaas-system")).getByRole("button", { name: "Delete gpupaas-system" })).toBeDisabled();
    expect(within(ml).getByRole("button", { name: "Delete ml" })).toBeEnabled();
  });

  it("adds a project, the server's refusal under the name", async () => {
    const { calls } = render({
      ProjectCreate: (variables) => {
        const input = variables.input as { name: string };
        if (input.name !== input.name.toLowerCase()) return refused("createProject", ["input", "name"], "Lowercase letters, digits and dashes only.", "INVALID", { project: null });
        return ok("createProject", { project: { id: "p3", name: input.name } });
      },
    });
    await screen.findByTestId("project-ml");
    fireEvent.click(screen.getByRole("button", { name: "Add Project" }));
    const dialog = await screen.findByRole("dialog");
    const name = within(dialog).getByLabelText(/^Name/);
    fireEvent.change(name, { target: { value: "Vision" } });
    fireEvent.click(within(dialog).getByRole("button", { name: "Add Project" }));
    expect(await within(dialog).findByText("Lowercase letters, digits and dashes only.")).toBeInTheDocument();
    expect(name).toHaveAttribute("aria-invalid", "true");
    fireEvent.change(name, { target: { value: "vision" } });
    fireEvent.change(within(dialog).getByLabelText(/^Display name/), { target: { value: " Computer vision " } });
    fireEvent.click(within(dialog).getByRole("button", { name: "Add Project" }));
    await dialogsGone();
    expect(calls.filter((c) => c.name === "ProjectCreate").map((c) => c.variables.input)).toEqual([
      { name: "Vision", displayName: null },
      { name: "vision", displayName: "Computer vision" },
    ]);
  });

  it("renames a project", async () => {
    const { calls } = render({ ProjectRename: ok("renameProject", { project: { id: "p2", displayName: "Nothing here" } }) });
    fireEvent.click(within(await screen.findByTestId("project-empty")).getByRole("button", { name: "Rename empty" }));
    const dialog = await screen.findByRole("dialog", { name: "Rename empty" });
    const displayName = within(dialog).getByLabelText(/^Display name/);
    expect(displayName).toHaveValue("Empty");
    fireEvent.change(displayName, { target: { value: "Nothing here" } });
    fireEvent.click(within(dialog).getByRole("button", { name: "Rename" }));
    await waitFor(() => expect(calls.find((c) => c.name === "ProjectRename")?.variables).toEqual({ input: { project: "empty", displayName: "Nothing here" } }));
    await dialogsGone();
  });

  it("shows why a project with instances was not deleted, and deletes one without", async () => {
    const { calls } = render({
      ProjectDelete: (variables) =>
        variables.name === "ml"
          ? refused("deleteProject", ["name"], 'Project "ml" still has 2 instances: delete them first.', "INVALID_STATE", { deletedId: null })
          : ok("deleteProject", { deletedId: "p2" }),
    });
    const ml = await screen.findByTestId("project-ml");
    fireEvent.click(within(ml).getByRole("button", { name: "Delete ml" }));
    let confirm = await screen.findByRole("dialog", { name: 'Delete project "ml"?' });
    expect(within(confirm).getByText(/still has 2 instances/)).toBeInTheDocument();
    fireEvent.click(within(confirm).getByRole("button", { name: "Delete" }));
    const alert = await screen.findByRole("alert");
    expect(alert).toHaveTextContent('Project "ml" was not deleted');
    expect(alert).toHaveTextContent('Project "ml" still has 2 instances: delete them first.');

    fireEvent.click(within(screen.getByTestId("project-empty")).getByRole("button", { name: "Delete empty" }));
    confirm = await screen.findByRole("dialog", { name: 'Delete project "empty"?' });
    fireEvent.click(within(confirm).getByRole("button", { name: "Delete" }));
    await waitFor(() => expect(calls.filter((c) => c.name === "ProjectDelete").map((c) => c.variables)).toEqual([{ name: "ml" }, { name: "empty" }]));
    await waitFor(() => expect(notifications.show).toHaveBeenCalledWith(expect.objectContaining({ title: "Project deleted", message: "empty" })));
    expect(screen.queryByRole("alert")).not.toBeInTheDocument();
  });
});
