import { MantineProvider } from "@mantine/core";
import { render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { errorsByField } from "./errors";
import { FormErrors } from "./FormErrors";

function show(errors: Record<string, string>, placed?: string[]) {
  return render(
    <MantineProvider>
      <FormErrors title="Not saved" errors={errors} placed={placed} />
    </MantineProvider>,
  );
}

describe("FormErrors", () => {
  it("lists the errors no field shows, under its title", () => {
    const errors = errorsByField([
      { field: ["input", "name"], message: "taken", code: "TAKEN" },
      { field: ["input", "ports", "0", "port"], message: "out of range", code: "INVALID" },
      { field: null, message: "Only admins may do that.", code: "FORBIDDEN" },
    ]);
    show(errors, ["name"]);
    const alert = screen.getByRole("alert");
    expect(within(alert).getByText("Not saved")).toBeInTheDocument();
    expect(within(alert).getByText("Only admins may do that.")).toBeInTheDocument();
    expect(within(alert).getByText("ports.0.port: out of range")).toBeInTheDocument();
    expect(within(alert).queryByText(/taken/)).toBeNull();
  });

  it("shows a network failure (kept under the empty key)", () => {
    show({ "": "Failed to fetch" });
    expect(within(screen.getByRole("alert")).getByText("Failed to fetch")).toBeInTheDocument();
  });

  it("shows nothing when every error is next to its field", () => {
    show({ name: "taken", "labels.0.key": "bad key" }, ["name", "labels"]);
    expect(screen.queryByRole("alert")).toBeNull();
    expect(screen.queryByText("Not saved")).toBeNull();
  });
});
