import {
  Badge,
  Button,
  Card,
  Code,
  Group,
  SegmentedControl,
  SimpleGrid,
  Stack,
  Text,
  TextInput,
  Title,
  Tooltip,
} from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { notifications } from "@mantine/notifications";
import { IconPencil, IconPlayerPlay, IconPlus, IconSearch, IconWorld } from "@tabler/icons-react";
import { Link, useSearchParams } from "react-router-dom";
import { useMutation, useQuery } from "urql";

import { useAuth } from "../../app/auth";
import { useProject } from "../../app/project";
import { ConfirmButton } from "../../components/ConfirmButton";
import { describeError } from "../../components/errors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import type { InstanceTemplateFieldsFragment, Vendor } from "../../gql/graphql";
import { InstanceTemplateDeleteDocument, InstanceTemplatesListDocument } from "./queries";
import { VENDORS, VendorBadge } from "./spec";

/** Who may change a template: its project's admins; global ones, platform admins only. */
export function canWrite(template: Pick<InstanceTemplateFieldsFragment, "project">, isPlatformAdmin: boolean, isAdmin: boolean) {
  return template.project ? isAdmin : isPlatformAdmin;
}

function TemplateCard({
  template,
  onDeleted,
}: {
  template: InstanceTemplateFieldsFragment;
  onDeleted: () => void;
}) {
  const { project, isAdmin } = useProject();
  const { me } = useAuth();
  const [, remove] = useMutation(InstanceTemplateDeleteDocument);
  const writable = canWrite(template, me?.isPlatformAdmin ?? false, isAdmin);
  const deleteBlocked = template.builtIn
    ? "Built-in templates cannot be deleted (they would come back at the next start): edit it instead."
    : !writable
      ? "Only platform admins may delete global templates."
      : null;

  async function onDelete() {
    const result = await remove({ id: template.id });
    const payload = result.data?.deleteInstanceTemplate;
    if (result.error || !payload) {
      notifications.show({ color: "red", title: "Could not delete the template", message: describeError(result.error) ?? "No answer" });
      return;
    }
    if (payload.userErrors.length) {
      notifications.show({
        color: "red",
        title: "Could not delete the template",
        message: payload.userErrors.map((e) => e.message).join("; "),
      });
      return;
    }
    notifications.show({ color: "green", message: `Instance template "${template.displayName}" deleted.` });
    onDeleted();
  }

  return (
    <Card withBorder radius="md" padding="md" data-testid={`template-${template.name}`}>
      <Stack gap="xs" h="100%">
        <Group justify="space-between" align="flex-start" wrap="nowrap">
          <Stack gap={2} style={{ minWidth: 0 }}>
            <Text fw={600} lineClamp={2}>
              {template.displayName}
            </Text>
            <Text size="xs" c="dimmed" ff="monospace">
              {template.name}
            </Text>
          </Stack>
          <VendorBadge vendor={template.vendor} />
        </Group>
        <Group gap={6}>
          {template.builtIn && (
            <Badge variant="outline" color="indigo" size="sm">
              Built-in
            </Badge>
          )}
          {template.project ? (
            <Badge variant="outline" color="gray" size="sm">
              Project
            </Badge>
          ) : (
            <Badge variant="outline" color="teal" size="sm" leftSection={<IconWorld size={12} />}>
              Global
            </Badge>
          )}
        </Group>
        {template.description && (
          <Text size="sm" c="dimmed" lineClamp={3}>
            {template.description}
          </Text>
        )}
        <Stack gap={4}>
          <Text size="xs" fw={500}>
            Image
          </Text>
          <Code style={{ wordBreak: "break-all" }}>{template.image}</Code>
        </Stack>
        <Stack gap={4}>
          <Text size="xs" fw={500}>
            Ports
          </Text>
          {template.ports.length ? (
            <Group gap={4}>
              {template.ports.map((port) => (
                <Badge key={port.name} variant="default" size="sm" tt="none">
                  {port.name} {port.port}/{port.protocol}
                </Badge>
              ))}
            </Group>
          ) : (
            <Text size="xs" c="dimmed">
              None
            </Text>
          )}
        </Stack>
        <Group gap="xs" mt="auto" pt="xs">
          <Button
            component={Link}
            to={`/p/${project}/studio/instance-templates/${template.id}/edit`}
            size="xs"
            variant="light"
            leftSection={<IconPencil size={14} />}
            aria-label={`${writable ? "Edit" : "View"} ${template.displayName}`}
          >
            {writable ? "Edit" : "View"}
          </Button>
          <Button
            component={Link}
            to={`/p/${project}/services/new?template=${template.id}`}
            size="xs"
            variant="subtle"
            leftSection={<IconPlayerPlay size={14} />}
            aria-label={`Launch a service from ${template.displayName}`}
          >
            Launch
          </Button>
          {deleteBlocked ? (
            <Tooltip label={deleteBlocked} multiline w={260} withArrow>
              <Button
                size="xs"
                variant="subtle"
                color="red"
                data-disabled
                aria-disabled="true"
                aria-label={`Delete ${template.displayName}`}
                aria-description={deleteBlocked}
                onClick={(event) => event.preventDefault()}
              >
                Delete
              </Button>
            </Tooltip>
          ) : (
            <ConfirmButton
              size="xs"
              variant="subtle"
              color="red"
              aria-label={`Delete ${template.displayName}`}
              label="Delete"
              title="Delete instance template"
              message={
                <>
                  Delete the instance template &quot;{template.displayName}&quot; ({template.name})? Service instances
                  already created from it keep their own copy and go on running. This cannot be undone.
                </>
              }
              confirmLabel="Delete"
              onConfirm={onDelete}
            />
          )}
        </Group>
      </Stack>
    </Card>
  );
}

export function InstanceTemplatesPage() {
  const { project } = useProject();
  const [params, setParams] = useSearchParams();
  const search = params.get("q") ?? "";
  const vendorParam = params.get("vendor");
  const vendor = VENDORS.includes(vendorParam as Vendor) ? (vendorParam as Vendor) : null;
  const [debounced] = useDebouncedValue(search.trim(), 300);
  const [{ data, fetching, error }, refetch] = useQuery({
    query: InstanceTemplatesListDocument,
    variables: { project, search: debounced || null, vendor },
    requestPolicy: "cache-and-network",
  });
  const reload = () => refetch({ requestPolicy: "network-only" });
  const setFilter = (key: string, value: string | null) =>
    setParams(
      (current) => {
        const next = new URLSearchParams(current);
        if (value) next.set(key, value);
        else next.delete(key);
        return next;
      },
      { replace: true },
    );
  const filtered = Boolean(debounced || vendor);
  const templates = data?.instanceTemplates ?? [];

  return (
    <Stack>
      <Group justify="space-between" align="flex-end">
        <Stack gap={2}>
          <Title order={2}>Instance Templates</Title>
          <Text c="dimmed" size="sm">
            Reusable settings for GPU service instances: image, command, ports and environment.
          </Text>
        </Stack>
        <Button component={Link} to={`/p/${project}/studio/instance-templates/new`} leftSection={<IconPlus size={16} />}>
          Add Instance Template
        </Button>
      </Group>
      <Group align="flex-end" gap="sm" wrap="wrap">
        <TextInput
          label="Search"
          placeholder="Name or display name"
          leftSection={<IconSearch size={14} />}
          value={search}
          onChange={(event) => setFilter("q", event.currentTarget.value)}
          style={{ flex: "1 1 220px" }}
          maw={420}
        />
        <Stack gap={4}>
          <Text size="sm" fw={500} id="vendor-filter-label">
            Vendor
          </Text>
          <SegmentedControl
            aria-labelledby="vendor-filter-label"
            size="xs"
            value={vendor ?? "ALL"}
            onChange={(value) => setFilter("vendor", value === "ALL" ? null : value)}
            data={[{ value: "ALL", label: "All" }, ...VENDORS.map((v) => ({ value: v, label: v }))]}
          />
        </Stack>
      </Group>
      {error && !data ? (
        <ErrorState message={describeError(error) ?? "Could not load the instance templates."} onRetry={reload} />
      ) : !data ? (
        <Loading label="Loading instance templates" />
      ) : templates.length === 0 ? (
        filtered ? (
          <EmptyState
            title="No template matches"
            action={
              <Button variant="light" onClick={() => setParams(new URLSearchParams(), { replace: true })}>
                Clear filters
              </Button>
            }
          >
            Nothing matches {debounced ? <>&quot;{debounced}&quot;</> : null}
            {vendor ? ` for ${vendor}` : null}.
          </EmptyState>
        ) : (
          <EmptyState
            title="No instance templates yet"
            action={
              <Button component={Link} to={`/p/${project}/studio/instance-templates/new`} leftSection={<IconPlus size={16} />}>
                Add Instance Template
              </Button>
            }
          >
            A template fixes a container&apos;s image, command, ports and environment once, so that people launch
            services with the same settings.
          </EmptyState>
        )
      ) : (
        <>
          <Text size="xs" c="dimmed" aria-live="polite">
            {templates.length} template{templates.length === 1 ? "" : "s"}
            {fetching ? " (refreshing…)" : ""}
          </Text>
          <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }}>
            {templates.map((template) => (
              <TemplateCard key={template.id} template={template} onDeleted={reload} />
            ))}
          </SimpleGrid>
          <Text size="xs" c="dimmed">
            Built-in templates ship with gpupaas: platform admins may edit them, but not delete them. Global templates
            are shared by every project.
          </Text>
        </>
      )}
    </Stack>
  );
}
