/* Test data and helpers of this area. */
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { expect } from "vitest";

/** Picks `option` in a Mantine Select: its own list (several Selects may have one open). */
export async function pick(combobox: HTMLElement, option: string): Promise<void> {
  fireEvent.click(combobox);
  const list = await waitFor(() => {
    const id = combobox.getAttribute("aria-controls");
    const found = id ? document.getElementById(id) : null;
    if (!found) throw new Error("the options are not shown");
    return found;
  });
  fireEvent.click(within(list).getByRole("option", { name: option, hidden: true }));
}

/** Until no dialog is left (a closing modal fades out first). */
export async function dialogsGone(): Promise<void> {
  await waitFor(() => expect(screen.queryByRole("dialog")).not.toBeInTheDocument(), { timeout: 5000 });
}
export const T0 = "2026-01-01T00:00:00Z";

export function userNode(username: string, extra: Record<string, unknown> = {}) {
  return {
    id: `u-${username}`,
    username,
    isPlatformAdmin: false,
    disabled: false,
    createdAt: T0,
    lastSignInAt: null,
    memberships: [{ role: "MEMBER", project: { id: "p1", name: "ml", displayName: "ML" } }],
    ...extra,
  };
}

export function usersAnswer(usernames: string[], { hasNextPage = false, totalCount = usernames.length, endCursor = "c-end" } = {}) {
  return {
    data: {
      users: {
        totalCount,
        pageInfo: { hasNextPage, endCursor },
        edges: usernames.map((u) => ({ cursor: `c-${u}`, node: userNode(u) })),
      },
    },
  };
}

export const ok = (name: string, extra: Record<string, unknown> = {}) => ({ data: { [name]: { ...extra, userErrors: [] } } });

export const refused = (name: string, field: string[] | null, message: string, code = "INVALID", extra: Record<string, unknown> = {}) => ({
  data: { [name]: { ...extra, userErrors: [{ field, message, code }] } },
});
