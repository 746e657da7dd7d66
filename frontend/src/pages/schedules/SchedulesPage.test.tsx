import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { AuthProvider } from "../../app/auth";
import { fakeClient, renderPage } from "../../test/render";
import { meAnswer } from "../instance-templates/testing";
import { SchedulesPage, describeSchedule } from "./SchedulesPage";

const EVENING = {
  id: "s1",
  name: "evening",
  action: "STOP",
  appliesTo: "SERVICE_INSTANCES",
  days: ["MON", "TUE", "WED", "THU", "FRI"],
  timeOfDay: "20:00",
  timeZone: "Europe/Berlin",
  nextRunAt: "2026-03-30T18:00:00+00:00",
  lastRunAt: "2026-03-27T19:00:00+00:00",
  lastResult: "stopped 2 service instances: a, b",
};

function render(answers: Parameters<typeof fakeClient>[0], role: "ADMIN" | "MEMBER" = "ADMIN") {
  const fake = fakeClient({ Me: meAnswer(false, role), ...answers });
  renderPage(
    <AuthProvider>
      <SchedulesPage />
    </AuthProvider>,
    { client: fake.client, path: "/p/ml/schedules", pattern: "/p/:project/schedules" },
  );
  return fake;
}

describe("schedules", () => {
  it("says what a schedule does in words", () => {
    expect(describeSchedule(EVENING as Parameters<typeof describeSchedule>[0])).toBe(
      "Stop every running service instance at 20:00 Europe/Berlin on weekdays",
    );
    expect(
      describeSchedule({ ...EVENING, action: "DESTROY", appliesTo: "COMPUTE_INSTANCES", days: ["SAT"] } as Parameters<typeof describeSchedule>[0]),
    ).toBe("Destroy every deployed compute instance at 20:00 Europe/Berlin on SAT");
  });

  it("lists schedules with their last result; members cannot add or delete", async () => {
    render({ Schedules: { data: { schedules: [EVENING] } } }, "MEMBER");
    const row = await screen.findByTestId("schedule-evening");
    expect(within(row).getByText(/on weekdays/)).toBeInTheDocument();
    expect(within(row).getByText("stopped 2 service instances: a, b")).toBeInTheDocument();
    expect(screen.queryByRole("form", { name: "New schedule" })).not.toBeInTheDocument();
    expect(screen.queryByRole("button", { name: /Delete schedule/ })).not.toBeInTheDocument();
  });

  it("shows the server's messages next to the fields, then adds the schedule", async () => {
    let attempt = 0;
    const { calls } = render({
      Schedules: { data: { schedules: [] } },
      CreateSchedule: () => {
        attempt += 1;
        return attempt === 1
          ? {
              data: {
                createSchedule: {
                  schedule: null,
                  userErrors: [
                    {
                      field: ["input", "timeZone"],
                      message: '"Berlin" is not an IANA time zone: use a name such as "Europe/Berlin" or "UTC" (did you mean "Europe/Berlin"?)',
                      code: "INVALID",
                    },
                  ],
                },
              },
            }
          : { data: { createSchedule: { schedule: { id: "s2", name: "night" }, userErrors: [] } } };
      },
    });
    const form = await screen.findByRole("form", { name: "New schedule" });
    fireEvent.change(within(form).getByLabelText(/^Name/), { target: { value: "night" } });
    fireEvent.change(within(form).getByLabelText(/^Time zone/), { target: { value: "Berlin" } });
    fireEvent.click(within(form).getByText("Destroy compute instances"));
    fireEvent.click(within(form).getByRole("button", { name: /Add Schedule/ }));
    expect(await within(form).findByText(/did you mean "Europe\/Berlin"/)).toBeInTheDocument();
    const sent = calls.find((c) => c.name === "CreateSchedule")?.variables.input as Record<string, unknown>;
    expect(sent).toMatchObject({
      project: "ml",
      name: "night",
      action: "DESTROY",
      appliesTo: "COMPUTE_INSTANCES",
      days: ["MON", "TUE", "WED", "THU", "FRI"],
      timeOfDay: "20:00",
      timeZone: "Berlin",
    });
    fireEvent.change(within(form).getByLabelText(/^Time zone/), { target: { value: "Europe/Berlin" } });
    fireEvent.click(within(form).getByRole("button", { name: /Add Schedule/ }));
    await waitFor(() => expect(calls.filter((c) => c.name === "Schedules").length).toBeGreaterThan(1));
    expect(within(form).queryByText(/did you mean/)).not.toBeInTheDocument();
  });
});
