/* The End User Configuration step of the compute profile wizard: the icon and the readme users
 * see in the catalog, each with a live preview. */
import { Group, Paper, SimpleGrid, Stack, Text, TextInput, Textarea } from "@mantine/core";
import { useState, type Dispatch } from "react";

import { ProfileIcon } from "./ProfileIcon";
import { ReadmePreview } from "./ReadmePreview";
import { iconUrlProblem, type WizardAction, type WizardState, type WizardValues } from "./wizardModel";


export function EndUserStep({ state, dispatch }: { state: WizardState; dispatch: Dispatch<WizardAction> }) {
  const { values, errors } = state;
  const [iconStatus, setIconStatus] = useState<string>("none");
  const change = (patch: Partial<WizardValues>, ...fields: string[]) => dispatch({ type: "change", patch, fields });

  return (
    <Stack>
      <Group align="flex-start" wrap="nowrap" gap="lg">
        <TextInput
          label="Icon URL"
          description="The icon users see in the catalog: an http(s) URL, or an image inline as a base64 data: URL (data:image/png;base64,...)."
          placeholder="https://example.com/icon.png"
          value={values.iconUrl}
          error={errors.iconUrl}
          onChange={(event) => change({ iconUrl: event.currentTarget.value }, "iconUrl")}
          onBlur={() => {
            // Checked as soon as it is entered (as Next does), not only when the profile is saved.
            const problem = iconUrlProblem(values.iconUrl);
            if (problem) dispatch({ type: "setErrors", errors: { iconUrl: problem }, merge: true });
          }}
          style={{ flex: 1 }}
        />
        <Stack gap={4} align="center">
          <Text size="xs" c="dimmed">
            Preview
          </Text>
          <ProfileIcon url={values.iconUrl} name={values.displayName || values.name || "Profile"} onStatus={setIconStatus} />
        </Stack>
      </Group>
      {iconStatus === "failed" && (
        <Text size="xs" c="orange" role="status">
          The image could not be loaded: users would see the default icon.
        </Text>
      )}
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <Textarea
          label="Readme"
          description="Markdown (or plain text) that tells users about the profile, with instructions if any."
          autosize
          minRows={12}
          maxRows={30}
          styles={{ input: { fontFamily: "var(--mantine-font-family-monospace)", fontSize: 13 } }}
          value={values.readme}
          error={errors.readme}
          onChange={(event) => change({ readme: event.currentTarget.value }, "readme")}
        />
        <Stack gap={4}>
          <div>
            <Text size="sm" fw={500}>
              Readme preview
            </Text>
            <Text size="xs" c="dimmed">
              As users will see it: rendered and sanitized by the server as you type.
            </Text>
          </div>
          <Paper withBorder p="md" radius="md" mih={200} data-testid="readme-preview">
            <ReadmePreview markdown={values.readme} />
          </Paper>
        </Stack>
      </SimpleGrid>
    </Stack>
  );
}
