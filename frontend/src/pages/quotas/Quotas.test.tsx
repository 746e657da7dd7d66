import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { me } from "../instances/testData";
import { CapacityCard } from "./CapacityCard";
import { QuotaCard } from "./QuotaCard";
import { percentUsed } from "./UsageBars";

const line = (key: string, label: string, used: number, limit: number | null, usedShown = String(used), limitShown = limit === null ? null : String(limit)) => ({
  key,
  label,
  used,
  limit,
  usedShown,
  limitShown,
});

function quota(members: { username: string; quota: { gpus: number } | null }[] = []) {
  return {
    data: {
      projectQuota: {
        project: "ml",
        quota: { gpus: 16, gpuLimits: [{ vendor: "NVIDIA", model: "A100", count: 8 }], cpu: null, memory: "512Gi", instances: null },
        usage: [
          line("gpus", "GPUs", 6, 16),
          line("gpus:NVIDIA:A100", "NVIDIA A100 GPUs", 8, 8),
          line("cpu", "CPU cores", 24, null),
          line("memory", "memory", 103079215104, 549755813888, "96Gi", "512Gi"),
          line("instances", "deployed instances", 3, null),
        ],
        members: members.map((m) => ({
          username: m.username,
          quota: m.quota ? { gpus: m.quota.gpus, gpuLimits: [], cpu: null, memory: null, instances: null } : null,
          usage: [line("gpus", "GPUs", 2, m.quota ? m.quota.gpus : null), line("instances", "deployed instances", 1, null)],
        })),
      },
    },
  };
}

function asRole(role: "ADMIN" | "MEMBER", platform = false) {
  const data = { ...me.data, me: { ...me.data.me, isPlatformAdmin: platform, memberships: [{ role, project: { id: "p1", name: "ml", displayName: "ML" } }] } };
  return { Me: { data }, Projects: { data: { projects: me.data.projects } } };
}

function setup(answers: Parameters<typeof fakeClient>[0], ui = <QuotaCard />) {
  const fake = fakeClient(answers);
  renderPage(<AuthProvider>{ui}</AuthProvider>, { client: fake.client, path: "/p/ml/dashboard", pattern: "/p/:project/dashboard" });
  return fake;
}

describe("percentUsed", () => {
  it("is the share of the limit, full at or past it", () => {
    expect(percentUsed(6, 8)).toBe(75);
    expect(percentUsed(9, 8)).toBe(100);
    expect(percentUsed(0, 0)).toBe(0);
    expect(percentUsed(1, 0)).toBe(100);
  });
});

describe("QuotaCard", () => {
  it("shows used / limit bars for limited dimensions and the rest as used without a limit", async () => {
    setup({ ...asRole("MEMBER"), ProjectQuota: quota([{ username: "ada", quota: { gpus: 4 } }]) });
    const project = await screen.findByTestId("quota-project");
    expect(within(project).getByRole("progressbar", { name: "GPUs: 6 / 16" })).toHaveAttribute("aria-valuenow", "38");
    expect(within(project).getByRole("progressbar", { name: "NVIDIA A100 GPUs: 8 / 8" })).toHaveAttribute("aria-valuenow", "100");
    expect(within(project).getByRole("progressbar", { name: "memory: 96Gi / 512Gi" })).toBeInTheDocument();
    expect(within(project).getByText("24 (no limit)")).toBeInTheDocument();
    expect(within(screen.getByTestId("quota-member-ada")).getByRole("progressbar", { name: "GPUs: 2 / 4" })).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: "Set quotas" })).not.toBeInTheDocument(); // members only read
  });

  it("lets a project admin set a member's quota and shows the server's refusal by the field", async () => {
    const fake = setup({
      ...asRole("ADMIN"),
      ProjectQuota: quota([{ username: "bob", quota: null }]),
      SetQuota: {
        data: {
          setQuota: {
            quota: null,
            userErrors: [{ field: ["input", "gpus"], message: 'project "ml" allows 16 GPUs: a member\'s limit cannot be more (not 20)', code: "INVALID" }],
          },
        },
      },
    });
    fireEvent.click(await screen.findByRole("button", { name: "Set quotas" }));
    const form = await screen.findByRole("form", { name: "Set a quota" });
    expect(within(form).getByRole("combobox", { name: "Quota of" })).toHaveValue("Member bob"); // not a platform admin: no project quota
    fireEvent.change(within(form).getByRole("textbox", { name: "GPUs (all vendors)" }), { target: { value: "20" } });
    fireEvent.click(within(form).getByRole("button", { name: "Save quota" }));
    await waitFor(() => expect(fake.calls.some((c) => c.name === "SetQuota")).toBe(true));
    const sent = fake.calls.find((c) => c.name === "SetQuota")!.variables.input as Record<string, unknown>;
    expect(sent).toMatchObject({ project: "ml", username: "bob", gpus: 20, cpu: null, memory: null, instances: null, gpuLimits: [] });
    expect(await within(form).findByText(/allows 16 GPUs: a member's limit cannot be more \(not 20\)/)).toBeInTheDocument();
  });

  it("lets a platform admin set the project's quota with a GPU model limit", async () => {
    const fake = setup({
      ...asRole("MEMBER", true),
      ProjectQuota: quota(),
      SetQuota: { data: { setQuota: { quota: { project: "ml" }, userErrors: [] } } },
    });
    fireEvent.click(await screen.findByRole("button", { name: "Set quotas" }));
    const form = await screen.findByRole("form", { name: "Set a quota" });
    expect(within(form).getByRole("combobox", { name: "Quota of" })).toHaveValue('Project "ml"');
    expect(within(form).getByRole("textbox", { name: "Model 1" })).toHaveValue("A100");
    fireEvent.change(within(form).getByRole("textbox", { name: "GPU count 1" }), { target: { value: "12" } });
    fireEvent.click(within(form).getByRole("button", { name: "Save quota" }));
    expect(await within(form).findByText("The quota was saved.")).toBeInTheDocument();
    const sent = fake.calls.find((c) => c.name === "SetQuota")!.variables.input as Record<string, unknown>;
    expect(sent).toMatchObject({ username: null, gpus: 16, memory: "512Gi", gpuLimits: [{ vendor: "NVIDIA", model: "A100", count: 12 }] });
  });
});

describe("CapacityCard", () => {
  it("shows capacity, allocated, free and the holders per model", async () => {
    setup(
      {
        ...asRole("MEMBER"),
        GpuCapacity: {
          data: {
            gpuCapacity: [
              {
                clusterId: "c1",
                clusterName: "farm",
                displayName: "GPU farm",
                models: [
                  {
                    vendor: "NVIDIA",
                    model: "H100 80GB",
                    capacity: 16,
                    allocated: 6,
                    free: 10,
                    others: 3,
                    holders: [{ project: "ml", owner: "bob", instanceId: "i1", instanceName: "train", gpus: 3 }],
                  },
                ],
              },
            ],
          },
        },
      },
      <CapacityCard project="ml" linkProject="ml" />,
    );
    const row = await screen.findByTestId("capacity-farm-NVIDIA-H100 80GB");
    expect(within(row).getAllByRole("cell").map((c) => c.textContent)).toEqual(["NVIDIA H100 80GB", "16", "6", "10", "3 × train (ml, bob)3 held by others"]);
    expect(within(row).getByRole("link", { name: "train" })).toHaveAttribute("href", "/p/ml/instances/i1");
  });
});
