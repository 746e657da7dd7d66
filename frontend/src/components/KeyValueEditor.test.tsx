import { MantineProvider } from "@mantine/core";
import { fireEvent, render, screen } from "@testing-library/react";
import { useState } from "react";
import { describe, expect, it } from "vitest";

import { errorsByField, unplacedErrors } from "./errors";
import { KeyValueEditor, type Pair } from "./KeyValueEditor";

function Harness({ errors = {} }: { errors?: Record<string, string> }) {
  const [pairs, setPairs] = useState<Pair[]>([{ key: "team", value: "ml" }]);
  return (
    <MantineProvider>
      <KeyValueEditor label="Labels" name="labels" value={pairs} onChange={setPairs} errors={errors} />
      <output data-testid="pairs">{JSON.stringify(pairs)}</output>
    </MantineProvider>
  );
}

describe("KeyValueEditor", () => {
  it("adds, edits and removes rows", () => {
    render(<Harness />);
    fireEvent.click(screen.getByRole("button", { name: "Add label" }));
    fireEvent.change(screen.getByLabelText("Labels 2 key"), { target: { value: "tier" } });
    fireEvent.change(screen.getByLabelText("Labels 2 value"), { target: { value: "gold" } });
    fireEvent.click(screen.getByRole("button", { name: "Remove labels 1" }));
    expect(screen.getByTestId("pairs").textContent).toBe(JSON.stringify([{ key: "tier", value: "gold" }]));
  });

  it("shows the server's error next to the row it names", () => {
    const errors = errorsByField([{ field: ["input", "labels", "0", "key"], message: "must be a label key", code: "INVALID" }]);
    render(<Harness errors={errors} />);
    expect(screen.getByText("must be a label key")).toBeInTheDocument();
  });
});

describe("errors", () => {
  it("keys errors by their path without input, and lists the ones no field shows", () => {
    const errors = errorsByField([
      { field: ["input", "name"], message: "taken", code: "TAKEN" },
      { field: null, message: "not allowed", code: "FORBIDDEN" },
    ]);
    expect(errors).toEqual({ name: "taken", "": "not allowed" });
    expect(unplacedErrors(errors, ["name"])).toEqual(["not allowed"]);
  });
});
