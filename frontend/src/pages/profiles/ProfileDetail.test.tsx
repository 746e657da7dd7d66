import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { ProfileDetailPage } from "./ProfileDetailPage";
import { renderStudio } from "./testUtils";

const PROFILE = {
  id: "cp1",
  name: "sm-gpu",
  displayName: "Small GPU",
  description: "For notebooks.",
  allocationType: "DEDICATED",
  createdAt: "2026-01-01T00:00:00",
  updatedAt: "2026-01-02T00:00:00",
  iconUrl: null,
  readme: "# Start here\n\n<script>alert(1)</script>",
  readmeHtml: "<h1>Start here</h1><p>&lt;script&gt;alert(1)&lt;/script&gt;</p>",
  project: { id: "p1", name: "ml" },
  resources: { cpu: "8", memory: "64Gi", storage: "100Gi", gpuCount: 2, gpuVendor: "NVIDIA", gpuModel: "A100" },
  labels: [{ key: "team", value: "ml" }],
  annotations: [],
  inputSettings: [
    { name: "driver", value: "550", required: true, override: "RESTRICTED", allowedValues: ["535", "550"] },
    { name: "token", value: "s3cret", required: false, override: "NOT_ALLOWED", allowedValues: [] },
  ],
  outputSettings: [
    { name: "namespace", displayName: "Namespace", visible: true },
    { name: "quota", displayName: null, visible: false },
  ],
  cluster: null,
  environmentTemplate: { id: "t1", name: "gpu-namespace", displayName: "GPU namespace", builtIn: true },
  environmentTemplateVersion: {
    id: "v1",
    version: "1.0.0",
    state: "ACTIVE",
    inputs: [
      { name: "driver", type: "STRING", description: "The GPU driver.", required: true, default: null, options: [], sensitive: false },
      { name: "token", type: "STRING", description: null, required: false, default: null, options: [], sensitive: true },
    ],
    outputs: [],
  },
  sharing: { mode: "SELECTED_PROJECTS", projects: [{ id: "p2", name: "vision", displayName: "Vision" }] },
};

describe("Compute Profile page", () => {
  it("shows what was configured, the readme as the server rendered it", async () => {
    const user = userEvent.setup({ delay: null });
    renderStudio("/p/ml/studio/profiles/cp1", [{ path: "studio/profiles/:id", element: <ProfileDetailPage /> }], {
      ProfileDetail: { data: { computeProfile: PROFILE } },
    });
    expect(await screen.findByRole("heading", { name: "Small GPU" })).toBeInTheDocument();
    expect(screen.getByText("2 × NVIDIA A100")).toBeInTheDocument();
    expect(screen.getByText("team=ml")).toBeInTheDocument();
    const readme = screen.getByRole("region", { name: "Readme" });
    expect(within(readme).getByRole("heading", { name: "Start here" })).toBeInTheDocument();
    expect(readme.querySelector("script")).toBeNull();
    // Sensitive values are not shown; restricted inputs list their allowed values.
    expect(screen.queryByText("s3cret")).not.toBeInTheDocument();
    expect(screen.getByText("535, 550")).toBeInTheDocument();
    expect(screen.getByText("Hidden")).toBeInTheDocument();
    expect(screen.getByText("Vision")).toBeInTheDocument();
    // No icon: the default one.
    expect(screen.getAllByTestId("profile-icon-fallback").length).toBeGreaterThan(0);
    expect(screen.getByRole("link", { name: "Edit" })).toHaveAttribute("href", "/p/ml/studio/profiles/cp1/edit");

    await user.click(screen.getAllByRole("button", { name: "Manage Sharing" })[0]);
    const dialog = await screen.findByRole("dialog", { name: "Manage Sharing" });
    expect(within(dialog).getByLabelText("Selected Projects")).toBeChecked();
  });
});
