import { Alert, Loader, Text } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { useQuery } from "urql";

import { describeError } from "../../components/errors";
import { graphql } from "../../gql";
import { ReadmeHtml } from "./ReadmeHtml";

export const ProfileReadmePreviewDocument = graphql(`
  query ProfileReadmePreview($markdown: String!) {
    renderReadme(markdown: $markdown)
  }
`);

/** The readme as users will see it, rendered and sanitized by the server as it is typed (debounced):
 * the browser never renders markdown itself. */
export function ReadmePreview({ markdown }: { markdown: string }) {
  const [debounced] = useDebouncedValue(markdown, 300);
  const empty = !debounced.trim();
  const [{ data, error }] = useQuery({
    query: ProfileReadmePreviewDocument,
    variables: { markdown: debounced },
    pause: empty,
  });
  if (empty) {
    return (
      <Text size="sm" c="dimmed">
        No readme: users see the description only.
      </Text>
    );
  }
  if (error) {
    return (
      <Alert color="red" p="xs" role="alert">
        {describeError(error)}
      </Alert>
    );
  }
  if (!data) return <Loader size="sm" aria-label="Rendering the preview" />;
  return <ReadmeHtml html={data.renderReadme ?? ""} label="Readme preview" />;
}
