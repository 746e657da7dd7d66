import { Typography } from "@mantine/core";

/** A readme as the server rendered it. The server renders the markdown and sanitizes the HTML
 * (mistune with escaping, then nh3 with an allowlist): it is safe to put into the page as it is,
 * and markdown is never rendered here. */
export function ReadmeHtml({ html, label = "Readme" }: { html: string; label?: string }) {
  return (
    <Typography
      aria-label={label}
      role="region"
      data-testid="readme-html"
      style={{ overflowWrap: "anywhere" }}
      dangerouslySetInnerHTML={{ __html: html }}
    />
  );
}
