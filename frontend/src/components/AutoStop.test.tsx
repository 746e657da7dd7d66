import { MantineProvider } from "@mantine/core";
import { fireEvent, render, screen } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";

import { LimitsEditor, TimeLimitsBody, formatMinutes } from "./AutoStop";

const NOW = new Date("2031-06-02T10:00:00Z");

function show(props: Partial<Parameters<typeof TimeLimitsBody>[0]>) {
  const onExtend = vi.fn(async () => null as string | null);
  render(
    <MantineProvider>
      <TimeLimitsBody limits={{ warned: false }} canExtend onExtend={onExtend} now={NOW} {...props} />
    </MantineProvider>,
  );
  return onExtend;
}

describe("auto-stop", () => {
  it("formats minutes as people read them", () => {
    expect([formatMinutes(240), formatMinutes(90), formatMinutes(2880), formatMinutes(0)]).toEqual(["4h", "1h 30m", "2d", "0m"]);
  });

  it("shows when it stops and extends it", async () => {
    const onExtend = show({
      limits: { autoStopMinutes: 240, maxLifetimeMinutes: 1440, stopsAt: "2031-06-02T12:00:00Z", stopReason: "auto-stop after 4h", lifetimeEndsAt: "2031-06-03T08:00:00Z", warned: true },
    });
    expect(screen.getByTestId("time-limits")).toHaveTextContent("auto-stop after 4h · maximum lifetime 1d");
    expect(screen.getByTestId("stops-at")).toHaveTextContent("(in 2h): auto-stop after 4h");
    fireEvent.click(screen.getByRole("button", { name: /Extend/ }));
    expect(onExtend).toHaveBeenCalledWith(60);
  });

  it("cannot extend past the maximum lifetime, and says why a stop was not carried out", () => {
    show({
      limits: {
        maxLifetimeMinutes: 600,
        stopsAt: "2031-06-02T12:00:00Z",
        lifetimeEndsAt: "2031-06-02T12:00:00Z",
        stopReason: "maximum lifetime 10h reached",
        warned: false,
        refusal: null,
      },
    });
    expect(screen.getByRole("button", { name: /Extend/ })).toBeDisabled();
    expect(screen.getByText(/cannot be extended/)).toBeInTheDocument();
  });

  it("offers nothing to those who do not manage it", () => {
    show({ canExtend: false, limits: { stopsAt: "2031-06-02T12:00:00Z", stopReason: "auto-stop after 4h", warned: false, refusal: "auto-stop after 1h, but not carried out: delete them first" } });
    expect(screen.queryByRole("button", { name: /Extend/ })).not.toBeInTheDocument();
    expect(screen.getByRole("status")).toHaveTextContent("but not carried out");
  });

  it("changes the instance's own limits and shows why the server refused", async () => {
    const onSave = vi.fn(async () => ({ maxLifetimeMinutes: 'compute profile "a100" limits the lifetime to 1d (1440 minutes): 2000 is more' }));
    render(
      <MantineProvider>
        <LimitsEditor limits={{ autoStopMinutes: 240, maxLifetimeMinutes: 1440, warned: false }} onSave={onSave} />
      </MantineProvider>,
    );
    fireEvent.click(screen.getByRole("button", { name: "Change time limits" }));
    fireEvent.change(screen.getByLabelText("Maximum lifetime (minutes)"), { target: { value: "2000" } });
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    expect(await screen.findByText(/limits the lifetime to 1d/)).toBeInTheDocument();
    expect(onSave).toHaveBeenCalledWith({ autoStopMinutes: 240, maxLifetimeMinutes: 2000 });
  });
});
