/* Test helpers of this area (shared with services/ and clusters/ tests). */
import { vi } from "vitest";

// jsdom has no document.fonts; Mantine's autosizing Textarea listens to it.
if (!("fonts" in document)) {
  Object.defineProperty(document, "fonts", {
    configurable: true,
    value: { addEventListener: () => {}, removeEventListener: () => {}, ready: Promise.resolve() },
  });
}

/** The answer of the Me query: a project admin of "ml" (and platform admin when asked). */
export function meAnswer(isPlatformAdmin: boolean, role: "ADMIN" | "MEMBER" = "ADMIN") {
  return {
    data: {
      me: {
        id: "u1",
        username: "alice",
        isPlatformAdmin,
        memberships: [{ role, project: { id: "p1", name: "ml", displayName: "ML" } }],
      },
      projects: [{ id: "p1", name: "ml", displayName: "ML" }],
    },
  };
}

// These pages' tests click through long forms: give them room when the machine is busy.
vi.setConfig({ testTimeout: 20_000 });
