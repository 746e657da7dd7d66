import { Badge, Button, Card, Group, Loader, SimpleGrid, Stack, Text, TextInput, Title } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { IconRocket, IconSearch } from "@tabler/icons-react";
import { useState } from "react";
import { Link } from "react-router-dom";
import { useQuery } from "urql";

import { useProject } from "../../app/project";
import { describeError } from "../../components/errors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import { graphql } from "../../gql";
import type { CatalogSkusQuery } from "../../gql/graphql";
import { AllocationBadge, ResourceGrid, SkuIcon } from "./resources";

export const CatalogSkusDocument = graphql(`
  query CatalogSkus($project: String!, $search: String) {
    catalog(project: $project, search: $search) {
      id
      name
      displayName
      description
      iconUrl
      allocationType
      resources {
        cpu
        memory
        storage
        gpuCount
        gpuVendor
        gpuModel
      }
      project {
        id
        name
        displayName
      }
    }
  }
`);

type Sku = CatalogSkusQuery["catalog"][number];

function SkuCard({ sku, project }: { sku: Sku; project: string }) {
  const base = `/p/${project}/catalog/${sku.id}`;
  const shared = sku.project.name !== project;
  return (
    <Card withBorder padding="lg" radius="md" component="article" aria-labelledby={`sku-${sku.id}`}>
      <Stack gap="sm" h="100%">
        <Group wrap="nowrap" align="flex-start" gap="md">
          <SkuIcon url={sku.iconUrl} />
          <Stack gap={4} style={{ minWidth: 0, flex: 1 }}>
            <Text
              id={`sku-${sku.id}`}
              fw={600}
              size="lg"
              component={Link}
              to={base}
              style={{ color: "inherit", textDecoration: "none" }}
              lineClamp={2}
            >
              {sku.displayName}
            </Text>
            <Group gap={6}>
              <Text size="xs" c="dimmed" ff="monospace">
                {sku.name}
              </Text>
              <AllocationBadge allocation={sku.allocationType} />
              {shared && (
                <Badge size="sm" variant="light" color="gray">
                  Shared by {sku.project.displayName || sku.project.name}
                </Badge>
              )}
            </Group>
          </Stack>
        </Group>
        <Text size="sm" c={sku.description ? undefined : "dimmed"} lineClamp={3}>
          {sku.description || "No description."}
        </Text>
        <ResourceGrid resources={sku.resources} cols={{ base: 2 }} />
        <Group justify="flex-end" mt="auto" pt="xs">
          <Button variant="default" component={Link} to={base} aria-label={`Details of ${sku.displayName}`}>
            Details
          </Button>
          <Button component={Link} to={`${base}/launch`} leftSection={<IconRocket size={16} />} aria-label={`Launch ${sku.displayName}`}>
            Launch
          </Button>
        </Group>
      </Stack>
    </Card>
  );
}

/** The SKUs (compute profiles) the project's users may launch. */
export function CatalogPage() {
  const { project, isAdmin } = useProject();
  const [search, setSearch] = useState("");
  const [debounced] = useDebouncedValue(search.trim(), 300);
  const [{ data, fetching, error }, refetch] = useQuery({
    query: CatalogSkusDocument,
    variables: { project, search: debounced || null },
    requestPolicy: "cache-and-network",
  });
  const skus = data?.catalog ?? [];

  let body;
  if (error && !data) {
    body = <ErrorState message={describeError(error) ?? "The catalog could not be loaded."} onRetry={() => refetch({ requestPolicy: "network-only" })} />;
  } else if (!data) {
    body = <Loading label="Loading the catalog" />;
  } else if (skus.length === 0 && debounced) {
    body = (
      <EmptyState title="No SKU matches your search" action={<Button variant="light" onClick={() => setSearch("")}>Clear the search</Button>}>
        Nothing in the catalog matches “{debounced}” in its name, display name or description.
      </EmptyState>
    );
  } else if (skus.length === 0) {
    body = (
      <EmptyState
        title="The catalog is empty"
        action={
          isAdmin ? (
            <Button component={Link} to={`/p/${project}/studio/profiles`}>
              Add Compute Profile
            </Button>
          ) : undefined
        }
      >
        {isAdmin
          ? "SKUs are the compute profiles of this project and those shared with it. Add a compute profile in the studio to publish one."
          : "SKUs appear here once a project admin publishes a compute profile. Ask your project's admins."}
      </EmptyState>
    );
  } else {
    body = (
      <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }} spacing="md">
        {skus.map((sku) => (
          <SkuCard key={sku.id} sku={sku} project={project} />
        ))}
      </SimpleGrid>
    );
  }

  return (
    <Stack gap="md">
      <Group justify="space-between" align="flex-end" wrap="wrap">
        <Stack gap={2}>
          <Title order={2}>Catalog</Title>
          <Text c="dimmed" size="sm">
            Compute SKUs you can launch as compute instances.
          </Text>
        </Stack>
        <TextInput
          aria-label="Search the catalog"
          placeholder="Search SKUs"
          leftSection={<IconSearch size={16} />}
          value={search}
          onChange={(event) => setSearch(event.currentTarget.value)}
          w={{ base: "100%", sm: 280 }}
          rightSection={fetching && data ? <Loader size="xs" aria-label="Searching" /> : undefined}
        />
      </Group>
      {body}
    </Stack>
  );
}
