/** What the API says the caller may do with an instance now (`actions` of a compute or service
 * instance): each action with `allowed`, and when not, the reason the mutation itself would give.
 * The studio asks instead of re-implementing the state machines: buttons follow these. */
export interface Action<Name extends string> {
  name: Name;
  allowed: boolean;
  reason?: string | null;
}

/** Why `name` is not possible now (null: it is). An action the API did not list is not offered. */
export function whyNot<Name extends string>(actions: readonly Action<Name>[], name: Name): string | null {
  const action = actions.find((a) => a.name === name);
  if (!action) return "Not possible now.";
  return action.allowed ? null : (action.reason ?? "Not possible now.");
}
