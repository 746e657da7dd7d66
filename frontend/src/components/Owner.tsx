import { SegmentedControl, Text } from "@mantine/core";
import { useSearchParams } from "react-router-dom";

import { useAuth } from "../app/auth";

/* Owners of compute and service instances: who owns one (the "Owner" column), and the lists'
 * "Mine / All" filter. Who may do what with an instance is the API's to say (`actions`): these
 * only show it. */

/** An instance's owner: "you" for the caller's own, "No owner" for instances made before owners
 * existed (only project admins manage those). */
export function OwnerText({ owner, size = "sm" }: { owner: { username: string } | null | undefined; size?: "xs" | "sm" }) {
  const { me } = useAuth();
  if (!owner) {
    return (
      <Text size={size} c="dimmed" fs="italic">
        No owner
      </Text>
    );
  }
  const mine = me?.username === owner.username;
  return (
    <Text size={size} fw={mine ? 500 : undefined} data-owner={owner.username}>
      {owner.username}
      {mine && (
        <Text span size={size} c="dimmed" fw={400}>
          {" "}
          (you)
        </Text>
      )}
    </Text>
  );
}

/** "Mine / All", kept in the address (?show=mine) so that a link or a reload keeps it. */
export function useMineFilter(onChange?: () => void): [boolean, (mine: boolean) => void] {
  const [params, setParams] = useSearchParams();
  const mine = params.get("show") === "mine";
  const setMine = (value: boolean) => {
    onChange?.();
    setParams(
      (current) => {
        const next = new URLSearchParams(current);
        if (value) next.set("show", "mine");
        else next.delete("show");
        return next;
      },
      { replace: true },
    );
  };
  return [mine, setMine];
}

export function MineAllControl({ mine, onChange, what }: { mine: boolean; onChange: (mine: boolean) => void; what: string }) {
  return (
    <SegmentedControl
      aria-label={`Show ${what}`}
      value={mine ? "mine" : "all"}
      onChange={(value) => onChange(value === "mine")}
      data={[
        { value: "mine", label: "Mine" },
        { value: "all", label: "All" },
      ]}
    />
  );
}
