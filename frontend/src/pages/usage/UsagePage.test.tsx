import { fireEvent, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { auth } from "../instances/testData";
import { daysBetween } from "./UsageChart";
import { UsagePage, hours, lastDays, periodProblem } from "./UsagePage";

const CSV = "day_utc,instance,gpu_hours,cpu_core_hours,memory_gib_hours,cost\r\n2026-03-01,ml/train,4.0000,8.0000,32.0000,\r\n";

function usage(variables: Record<string, unknown>) {
  return {
    data: {
      usage: {
        from: variables.from,
        to: variables.to,
        until: "2026-03-10T12:00:00+00:00",
        csv: CSV,
        days: [
          { day: variables.from, group: "ml/train", gpuHours: 4 },
          { day: variables.from, group: "ml/notebook", gpuHours: 1.5 },
          { day: variables.to, group: "ml/train", gpuHours: 2 },
        ],
        groups: [
          { group: "ml/notebook", gpuHours: 1.5, cpuCoreHours: 3, memoryGibHours: 12, cost: null },
          { group: "ml/train", gpuHours: 6, cpuCoreHours: 12, memoryGibHours: 48, cost: 15 },
        ],
        total: { gpuHours: 7.5, cpuCoreHours: 15, memoryGibHours: 60, cost: null },
      },
    },
  };
}

function setup(answer: (variables: Record<string, unknown>) => unknown = usage, extra: Parameters<typeof fakeClient>[0] = {}) {
  const fake = fakeClient({ ...auth, UsageReport: answer as never, ...extra });
  renderPage(
    <AuthProvider>
      <UsagePage />
    </AuthProvider>,
    { client: fake.client, path: "/p/ml/usage", pattern: "/p/:project/usage" },
  );
  return fake;
}

afterEach(() => vi.restoreAllMocks());

function read(blob: Blob): Promise<string> {
  return new Promise((resolve) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.readAsText(blob);
  });
}

describe("UsagePage", () => {
  it("shows GPU-hours per day stacked by group, and a table with totals and costs", async () => {
    const fake = setup();
    const table = await screen.findByRole("table", { name: "Usage per group" });
    expect(table).toHaveTextContent("ml/train6.0012.0048.0015.00");
    expect(table).toHaveTextContent("ml/notebook1.503.0012.00—");
    expect(table).toHaveTextContent("Total7.5015.0060.00—");
    const request = fake.calls.find((c) => c.name === "UsageReport");
    expect(request?.variables).toMatchObject({ groupBy: "INSTANCE", project: "ml" });
    const { from, to } = request!.variables as { from: string; to: string };
    expect(screen.getByTestId(`bar-${from}-ml/train`)).toBeInTheDocument();
    expect(screen.getByTestId(`bar-${from}-ml/notebook`)).toBeInTheDocument();
    expect(screen.getByTestId(`bar-${to}-ml/train`)).toBeInTheDocument();
    expect(screen.getByText(`${from} · ml/train: 4.00 GPU-hours`)).toBeInTheDocument();
  });

  it("asks again for another grouping and for every project the caller may see", async () => {
    const fake = setup();
    await screen.findByRole("table", { name: "Usage per group" });
    await userEvent.click(screen.getByRole("radio", { name: "All I may see" }));
    await waitFor(() => expect(fake.calls.at(-1)?.variables).toMatchObject({ project: null }));
    fireEvent.click(screen.getByRole("combobox", { name: "Group by" }));
    fireEvent.click(await screen.findByRole("option", { name: "Project", hidden: true }));
    await waitFor(() => expect(fake.calls.at(-1)?.variables).toMatchObject({ groupBy: "PROJECT" }));
  });

  it("downloads the report's CSV", async () => {
    const created: Blob[] = [];
    vi.spyOn(URL, "createObjectURL").mockImplementation((blob) => {
      created.push(blob as Blob);
      return "blob:usage";
    });
    vi.spyOn(URL, "revokeObjectURL").mockImplementation(() => {});
    const click = vi.spyOn(HTMLAnchorElement.prototype, "click").mockImplementation(() => {});
    setup();
    await screen.findByRole("table", { name: "Usage per group" });
    await userEvent.click(screen.getByRole("button", { name: "Download CSV" }));
    expect(click).toHaveBeenCalledTimes(1);
    expect(await read(created[0])).toBe(CSV);
  });

  it("refuses a period that ends before it starts without asking the server", async () => {
    const fake = setup();
    await screen.findByRole("table", { name: "Usage per group" });
    const asked = fake.calls.filter((c) => c.name === "UsageReport").length;
    const to = screen.getByLabelText("To (UTC)");
    await userEvent.clear(to);
    await userEvent.type(to, "2020-01-01");
    expect(await screen.findByText("The end is before the start: pick an end on or after it.")).toBeInTheDocument();
    expect(fake.calls.filter((c) => c.name === "UsageReport").length).toBe(asked);
  });

  it("says so when nothing was used", async () => {
    setup((variables) => ({
      data: {
        usage: {
          ...usage(variables).data.usage,
          days: [],
          groups: [],
          total: { gpuHours: 0, cpuCoreHours: 0, memoryGibHours: 0, cost: 0 },
        },
      },
    }));
    expect(await screen.findByText("No usage in this period")).toBeInTheDocument();
  });
});

describe("GPU prices", () => {
  const root = {
    Me: { data: { ...auth.Me.data, me: { ...auth.Me.data.me, isPlatformAdmin: true } } },
    Projects: auth.Projects,
  };

  it("are for platform admins only", async () => {
    setup(usage);
    await screen.findByRole("table", { name: "Usage per group" });
    expect(screen.queryByRole("form", { name: "Set a GPU price" })).not.toBeInTheDocument();
  });

  it("lists, sets and shows a price's problem next to its field", async () => {
    const fake = setup(usage, {
      ...root,
      GpuPrices: { data: { gpuPrices: [{ id: "gp1", vendor: "NVIDIA", model: "H100", pricePerGpuHour: "2.5000" }] } },
      SetGpuPrice: (variables) =>
        (variables.input as { pricePerGpuHour: string }).pricePerGpuHour === "-1"
          ? {
              data: {
                setGpuPrice: {
                  gpuPrice: null,
                  userErrors: [{ field: ["pricePerGpuHour"], message: "must be a number from 0 to 1000000", code: "INVALID" }],
                },
              },
            }
          : { data: { setGpuPrice: { gpuPrice: { id: "gp2" }, userErrors: [] } } },
      DeleteGpuPrice: { data: { deleteGpuPrice: { deletedId: "gp1", userErrors: [] } } },
    });
    const prices = await screen.findByRole("table", { name: "GPU prices" });
    expect(prices).toHaveTextContent("NVIDIAH1002.5000");
    const price = screen.getByRole("textbox", { name: /^Price per GPU-hour/ });
    await userEvent.type(price, "-1");
    await userEvent.click(screen.getByRole("button", { name: "Set price" }));
    expect(await screen.findByText("must be a number from 0 to 1000000")).toBeInTheDocument();
    await userEvent.clear(price);
    await userEvent.type(price, "1.25");
    await userEvent.type(screen.getByRole("textbox", { name: "GPU model" }), "A100");
    await userEvent.click(screen.getByRole("button", { name: "Set price" }));
    await waitFor(() => expect(screen.queryByText("must be a number from 0 to 1000000")).not.toBeInTheDocument());
    expect(fake.calls.filter((c) => c.name === "SetGpuPrice").at(-1)?.variables).toEqual({
      input: { vendor: "NVIDIA", model: "A100", pricePerGpuHour: "1.25" },
    });
    await userEvent.click(screen.getByRole("button", { name: "Remove the price of NVIDIA H100" }));
    await waitFor(() => expect(fake.calls.some((c) => c.name === "DeleteGpuPrice" && c.variables.id === "gp1")).toBe(true));
  });
});

describe("periods", () => {
  it("counts UTC days, both ends included", () => {
    expect(daysBetween("2026-02-27", "2026-03-02")).toEqual(["2026-02-27", "2026-02-28", "2026-03-01", "2026-03-02"]);
    expect(lastDays(30, new Date("2026-03-31T23:30:00Z"))).toEqual({ from: "2026-03-02", to: "2026-03-31" });
    expect(periodProblem("2025-01-01", "2026-03-01")).toBe("That is 425 days: pick at most 366 days at a time.");
    expect(periodProblem("2026-03-01", "2026-03-01")).toBeNull();
  });

  it("shows a few minutes as more than nothing", () => {
    expect(hours(0.0021)).toBe("0.0021");
    expect(hours(0)).toBe("0.00");
    expect(hours(1234.5)).toBe("1,234.50");
  });
});
