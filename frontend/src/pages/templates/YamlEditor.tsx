import { Box, Input, Textarea } from "@mantine/core";
import type { RefObject } from "react";

const LINE_HEIGHT = 20;
const PADDING_Y = 8;

/** A monospace YAML editor that grows with its text, with line numbers; lines with problems
 * (`errorLines`, 1-based) are marked in the gutter. */
export function YamlEditor({
  id,
  label,
  description,
  value,
  onChange,
  error,
  errorLines,
  required,
  editorRef,
  describedBy,
  minRows = 16,
}: {
  id: string;
  label: string;
  description?: string;
  value: string;
  onChange: (value: string) => void;
  /** Shown under the editor (true: only the error state, the messages are elsewhere). */
  error?: string | boolean;
  errorLines?: ReadonlySet<number>;
  required?: boolean;
  editorRef?: RefObject<HTMLTextAreaElement | null>;
  describedBy?: string;
  minRows?: number;
}) {
  const count = Math.max(value.split("\n").length, minRows);
  const invalid = Boolean(error);
  return (
    <Input.Wrapper
      id={id}
      label={label}
      description={description}
      required={required}
      error={typeof error === "string" ? error : undefined}
    >
      <Box style={{ display: "flex", alignItems: "stretch" }} mt={4}>
        <Box
          aria-hidden
          data-testid="yaml-gutter"
          style={{
            flexShrink: 0,
            minWidth: 44,
            padding: `${PADDING_Y + 1}px 8px ${PADDING_Y + 1}px 6px`,
            textAlign: "right",
            fontFamily: "var(--mantine-font-family-monospace)",
            fontSize: 12,
            lineHeight: `${LINE_HEIGHT}px`,
            color: "var(--mantine-color-dimmed)",
            background: "var(--mantine-color-default-hover)",
            borderTop: `1px solid ${invalid ? "var(--mantine-color-error)" : "var(--mantine-color-default-border)"}`,
            borderBottom: `1px solid ${invalid ? "var(--mantine-color-error)" : "var(--mantine-color-default-border)"}`,
            borderLeft: `1px solid ${invalid ? "var(--mantine-color-error)" : "var(--mantine-color-default-border)"}`,
            borderRadius: "var(--mantine-radius-md) 0 0 var(--mantine-radius-md)",
            userSelect: "none",
          }}
        >
          {Array.from({ length: count }, (_, index) => {
            const marked = errorLines?.has(index + 1);
            return (
              <div
                key={index}
                data-error-line={marked ? "true" : undefined}
                style={
                  marked
                    ? { color: "var(--mantine-color-red-filled)", fontWeight: 700, background: "var(--mantine-color-red-light)" }
                    : undefined
                }
              >
                {index + 1}
              </div>
            );
          })}
        </Box>
        <Textarea
          id={id}
          ref={editorRef}
          aria-label={label}
          aria-describedby={describedBy}
          aria-invalid={invalid}
          error={invalid}
          autosize
          minRows={minRows}
          wrap="off"
          spellCheck={false}
          autoCapitalize="off"
          autoCorrect="off"
          value={value}
          onChange={(event) => onChange(event.currentTarget.value)}
          style={{ flex: 1, minWidth: 0 }}
          styles={{
            input: {
              fontFamily: "var(--mantine-font-family-monospace)",
              fontSize: 13,
              lineHeight: `${LINE_HEIGHT}px`,
              paddingTop: PADDING_Y,
              paddingBottom: PADDING_Y,
              whiteSpace: "pre",
              overflowX: "auto",
              borderTopLeftRadius: 0,
              borderBottomLeftRadius: 0,
            },
          }}
        />
      </Box>
    </Input.Wrapper>
  );
}

/** Puts the caret on a line (1-based) of the editor, selects it and scrolls it into view. */
export function goToLine(textarea: HTMLTextAreaElement | null, line: number): void {
  if (!textarea) return;
  const lines = textarea.value.split("\n");
  const index = Math.min(Math.max(line, 1), lines.length) - 1;
  const start = lines.slice(0, index).reduce((sum, l) => sum + l.length + 1, 0);
  textarea.focus({ preventScroll: true });
  textarea.setSelectionRange(start, start + lines[index].length);
  const top = Math.max(textarea.getBoundingClientRect().top + window.scrollY + index * LINE_HEIGHT - 160, 0);
  const root = document.scrollingElement as HTMLElement | null;
  if (!root) return;
  if (typeof root.scrollTo === "function") root.scrollTo({ top, behavior: "smooth" });
  else root.scrollTop = top;
}
