import { Anchor, Badge, Breadcrumbs, Button, Card, Grid, Group, Stack, Table, Text, Title, Typography } from "@mantine/core";
import { IconRocket } from "@tabler/icons-react";
import { Link, useParams } from "react-router-dom";
import { useQuery } from "urql";

import { useProject } from "../../app/project";
import { describeError } from "../../components/errors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import { graphql } from "../../gql";
import { inputFields, SENSITIVE_MASK } from "./inputs";
import { AllocationBadge, ResourceGrid, SkuIcon } from "./resources";

export const CatalogSkuDocument = graphql(`
  query CatalogSku($id: ID!) {
    computeProfile(id: $id) {
      id
      name
      displayName
      description
      iconUrl
      readmeHtml
      allocationType
      resources {
        cpu
        memory
        storage
        gpuCount
        gpuVendor
        gpuModel
      }
      labels {
        key
        value
      }
      project {
        id
        name
        displayName
      }
      environmentTemplate {
        id
        name
        displayName
      }
      environmentTemplateVersion {
        id
        version
        inputs {
          name
          type
          description
          required
          default
          options
          pattern
          min
          max
          sensitive
        }
      }
      inputSettings {
        name
        value
        required
        override
        allowedValues
      }
    }
  }
`);

const POLICY: Record<string, string> = {
  ALLOWED: "You choose",
  RESTRICTED: "You choose from a list",
  NOT_ALLOWED: "Fixed by the profile",
};

/** A SKU: its readme (rendered and sanitized by the server), resources and what users configure. */
export function SkuPage() {
  const { project } = useProject();
  const { profileId = "" } = useParams();
  const [{ data, error }, refetch] = useQuery({ query: CatalogSkuDocument, variables: { id: profileId }, requestPolicy: "cache-and-network" });
  const catalog = `/p/${project}/catalog`;

  if (error && !data) {
    return <ErrorState message={describeError(error) ?? "The SKU could not be loaded."} onRetry={() => refetch({ requestPolicy: "network-only" })} />;
  }
  if (!data) return <Loading label="Loading the SKU" />;
  const sku = data.computeProfile;
  if (!sku) {
    return (
      <EmptyState title="This SKU does not exist" action={<Button component={Link} to={catalog}>Back to the catalog</Button>}>
        It may have been deleted, or it is no longer shared with this project.
      </EmptyState>
    );
  }
  const fields = inputFields(sku.environmentTemplateVersion.inputs, sku.inputSettings);
  const launch = (
    <Button component={Link} to={`${catalog}/${sku.id}/launch`} leftSection={<IconRocket size={16} />}>
      Launch
    </Button>
  );

  return (
    <Stack gap="md">
      <Breadcrumbs>
        <Anchor component={Link} to={catalog}>
          Catalog
        </Anchor>
        <Text>{sku.displayName}</Text>
      </Breadcrumbs>
      <Group justify="space-between" align="flex-start" wrap="wrap" gap="md">
        <Group wrap="nowrap" align="flex-start" gap="md" style={{ minWidth: 0, flex: 1 }}>
          <SkuIcon url={sku.iconUrl} size={56} />
          <Stack gap={4} style={{ minWidth: 0 }}>
            <Title order={2}>{sku.displayName}</Title>
            <Group gap={6}>
              <Text size="sm" c="dimmed" ff="monospace">
                {sku.name}
              </Text>
              <AllocationBadge allocation={sku.allocationType} />
              {sku.project.name !== project && (
                <Badge size="sm" variant="light" color="gray">
                  Shared by {sku.project.displayName || sku.project.name}
                </Badge>
              )}
            </Group>
            {sku.description && <Text size="sm">{sku.description}</Text>}
          </Stack>
        </Group>
        {launch}
      </Group>

      <Grid gap="md">
        <Grid.Col span={{ base: 12, md: 8 }}>
          <Card withBorder padding="lg">
            <Title order={4} mb="sm">
              Readme
            </Title>
            {sku.readmeHtml ? (
              // The server renders the markdown and sanitizes the HTML: it is safe as it is.
              <Typography>
                <div data-testid="sku-readme" dangerouslySetInnerHTML={{ __html: sku.readmeHtml }} />
              </Typography>
            ) : (
              <Text c="dimmed" size="sm">
                This SKU has no readme.
              </Text>
            )}
          </Card>
        </Grid.Col>
        <Grid.Col span={{ base: 12, md: 4 }}>
          <Stack gap="md">
            <Card withBorder padding="lg">
              <Title order={4} mb="sm">
                Resources
              </Title>
              <ResourceGrid resources={sku.resources} cols={{ base: 2 }} />
              <Text size="xs" c="dimmed" mt="sm">
                Environment template: {sku.environmentTemplate.displayName || sku.environmentTemplate.name} {sku.environmentTemplateVersion.version}
              </Text>
            </Card>
            {fields.length > 0 && (
              <Card withBorder padding="lg">
                <Title order={4} mb="sm">
                  Configuration
                </Title>
                <Table.ScrollContainer minWidth={260}>
                  <Table verticalSpacing={6} aria-label="Inputs">
                    <Table.Thead>
                      <Table.Tr>
                        <Table.Th>Input</Table.Th>
                        <Table.Th>Value</Table.Th>
                      </Table.Tr>
                    </Table.Thead>
                    <Table.Tbody>
                      {fields.map((field) => (
                        <Table.Tr key={field.name}>
                          <Table.Td>
                            <Text size="sm" ff="monospace">
                              {field.name}
                            </Text>
                            <Text size="xs" c="dimmed">
                              {POLICY[field.override]}
                              {field.required ? " · required" : ""}
                            </Text>
                          </Table.Td>
                          <Table.Td>
                            <Text size="sm">
                              {field.sensitive && field.profileValue
                                ? SENSITIVE_MASK
                                : field.override === "RESTRICTED"
                                  ? field.allowedValues.join(", ")
                                  : field.profileValue || "—"}
                            </Text>
                          </Table.Td>
                        </Table.Tr>
                      ))}
                    </Table.Tbody>
                  </Table>
                </Table.ScrollContainer>
              </Card>
            )}
            {sku.labels.length > 0 && (
              <Card withBorder padding="lg">
                <Title order={4} mb="sm">
                  Labels
                </Title>
                <Group gap={6}>
                  {sku.labels.map((label) => (
                    <Badge key={label.key} variant="light" color="gray" tt="none">
                      {label.key}={label.value}
                    </Badge>
                  ))}
                </Group>
              </Card>
            )}
          </Stack>
        </Grid.Col>
      </Grid>
    </Stack>
  );
}
