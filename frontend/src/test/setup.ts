import "@testing-library/jest-dom/vitest";
import { notifications } from "@mantine/notifications";
import { cleanup } from "@testing-library/react";
import { afterEach, vi } from "vitest";

// The test files of a worker share one module graph and one jsdom (vite.config.ts: isolate off), so
// what a test leaves behind is undone here: the rendered tree, Mantine's notification store (a
// module singleton: notifications left by one file would queue another's behind them), spies.
afterEach(() => {
  cleanup();
  notifications.clean();
  notifications.cleanQueue();
  vi.restoreAllMocks();
  window.localStorage.clear();
  window.sessionStorage.clear();
});

// jsdom lacks these; Mantine reads them.
if (!window.matchMedia) {
  window.matchMedia = (query: string) =>
    ({
      matches: false,
      media: query,
      onchange: null,
      addListener: () => {},
      removeListener: () => {},
      addEventListener: () => {},
      removeEventListener: () => {},
      dispatchEvent: () => false,
    }) as MediaQueryList;
}
class NoResizeObserver {
  observe(): void {}
  unobserve(): void {}
  disconnect(): void {}
}
(window as unknown as { ResizeObserver: unknown }).ResizeObserver ??= NoResizeObserver;
window.HTMLElement.prototype.scrollIntoView ??= function () {};
