import { MantineProvider } from "@mantine/core";
import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { ConnectLinks } from "./live";

const LINKS = [
  { port: "jupyter", url: "http://127.0.0.1:31000/?token=abc" },
  { port: "ssh", url: "ssh -p 31001 root@127.0.0.1" },
];

describe("ConnectLinks", () => {
  it("opens the links of a running service", () => {
    render(
      <MantineProvider>
        <ConnectLinks links={LINKS} status="RUNNING" />
      </MantineProvider>,
    );
    const link = screen.getByRole("link", { name: /Connect to jupyter/ });
    expect(link).toHaveAttribute("href", LINKS[0].url);
    expect(screen.getByLabelText("ssh ssh command")).toHaveTextContent("ssh -p 31001");
  });

  it("shows no link for a stopped service: nothing answers there", () => {
    render(
      <MantineProvider>
        <ConnectLinks links={LINKS} status="STOPPED" />
      </MantineProvider>,
    );
    expect(screen.queryByRole("link")).toBeNull();
    expect(screen.queryByRole("button", { name: /Connect to/ })).toBeNull();
    expect(screen.getByTestId("connect-stopped")).toHaveTextContent("Stopped: start it to connect");
  });

  it("shows a starting service's links without offering them yet", () => {
    render(
      <MantineProvider>
        <ConnectLinks links={LINKS} status="STARTING" />
      </MantineProvider>,
    );
    expect(screen.queryByRole("link")).toBeNull();
    expect(screen.getByRole("button", { name: /Connect to jupyter \(available once running\)/ })).toBeDisabled();
  });
});
