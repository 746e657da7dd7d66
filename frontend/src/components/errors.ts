/** Server userErrors, shown next to their fields: `field` is the path (["input", "ports", "0",
 * "port"]); forms look errors up by the path without "input", joined with ".". */
export interface ServerError {
  field?: readonly string[] | null;
  message: string;
  code: string;
}

export function fieldKey(field: readonly string[] | null | undefined): string {
  if (!field) return "";
  const parts = field[0] === "input" ? field.slice(1) : field;
  return parts.join(".");
}

/** Errors by field key ("" holds those without a field). */
export function errorsByField(errors: readonly ServerError[] | null | undefined): Record<string, string> {
  const found: Record<string, string> = {};
  for (const error of errors ?? []) {
    const key = fieldKey(error.field);
    found[key] = found[key] ? `${found[key]}; ${error.message}` : error.message;
  }
  return found;
}

/** The errors no visible field shows (for a summary above the form's buttons). */
export function unplacedErrors(errors: Record<string, string>, placed: readonly string[]): string[] {
  return Object.entries(errors)
    .filter(([key]) => !placed.some((prefix) => key === prefix || key.startsWith(`${prefix}.`)))
    .map(([key, message]) => (key ? `${key}: ${message}` : message));
}

/** The first message of a GraphQL error (network, FORBIDDEN, ...), readable. */
export function describeError(error: { message: string; graphQLErrors?: { message: string }[] } | undefined | null): string | null {
  if (!error) return null;
  const first = error.graphQLErrors?.[0]?.message;
  return first ?? error.message.replace(/^\[(Network|GraphQL)\]\s*/, "");
}
