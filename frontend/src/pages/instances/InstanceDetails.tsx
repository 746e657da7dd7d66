/* The sections of the compute instance page that show what it is: its details, and key/value
 * tables (inputs, outputs, labels, annotations). */
import { ActionIcon, Anchor, Badge, CopyButton, DataList, Group, Table, Text, Tooltip } from "@mantine/core";
import { IconCheck, IconCopy } from "@tabler/icons-react";
import { Link } from "react-router-dom";

import { OwnerText } from "../../components/Owner";
import { Panel } from "../../components/Section";
import { AllocationBadge } from "../catalog/resources";
import { when, type Instance } from "./overview";
import { SharingBadge } from "./SharingBadge";

/** Key/value pairs (inputs, labels, outputs), each value copyable when asked. */
export function Pairs({ pairs, empty, label, copy }: { pairs: readonly { key: string; value: string }[]; empty: string; label: string; copy?: boolean }) {
  if (pairs.length === 0) {
    return (
      <Text size="sm" c="dimmed">
        {empty}
      </Text>
    );
  }
  return (
    <Table.ScrollContainer minWidth={320}>
      <Table verticalSpacing={6} aria-label={label}>
        <Table.Tbody>
          {pairs.map((pair) => (
            <Table.Tr key={pair.key}>
              <Table.Td w="35%">
                {/* Names stay whole: broken only when one is longer than the column (not "maxP|ods"). */}
                <Text size="sm" ff="monospace" style={{ wordBreak: "normal", overflowWrap: "break-word" }}>
                  {pair.key}
                </Text>
              </Table.Td>
              <Table.Td>
                <Group gap={4} wrap="nowrap" align="flex-start">
                  <Text size="sm" style={{ wordBreak: "normal", overflowWrap: "anywhere" }}>
                    {pair.value}
                  </Text>
                  {copy && (
                    <CopyButton value={pair.value}>
                      {({ copied, copy: doCopy }) => (
                        <Tooltip label={copied ? "Copied" : "Copy"}>
                          <ActionIcon variant="subtle" color={copied ? "teal" : "gray"} size="sm" onClick={doCopy} aria-label={`Copy ${pair.key}`}>
                            {copied ? <IconCheck size={14} /> : <IconCopy size={14} />}
                          </ActionIcon>
                        </Tooltip>
                      )}
                    </CopyButton>
                  )}
                </Group>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

/** Whose it is, where it comes from and where it runs: owner, profile, template, cluster,
 * allocation, sharing. */
export function DetailsSection({ instance, base }: { instance: Instance; base: string }) {
  return (
    <Panel title="Details">
      <DataList orientation="horizontal" labelWidth="140px" withDivider>
        <DataList.Item>
          <DataList.ItemLabel>Owner</DataList.ItemLabel>
          <DataList.ItemValue>
            <OwnerText owner={instance.owner} />
          </DataList.ItemValue>
        </DataList.Item>
        <DataList.Item>
          <DataList.ItemLabel>Compute profile</DataList.ItemLabel>
          <DataList.ItemValue>
            {instance.profile ? (
              <Anchor component={Link} to={`${base}/catalog/${instance.profile.id}`} size="sm">
                {instance.profile.displayName}
              </Anchor>
            ) : (
              <Text size="sm">{instance.profileName} (no longer available)</Text>
            )}
          </DataList.ItemValue>
        </DataList.Item>
        <DataList.Item>
          <DataList.ItemLabel>Environment template</DataList.ItemLabel>
          <DataList.ItemValue>
            {instance.templateName} {instance.templateVersion}
          </DataList.ItemValue>
        </DataList.Item>
        <DataList.Item>
          <DataList.ItemLabel>Cluster</DataList.ItemLabel>
          <DataList.ItemValue>
            {instance.cluster ? (
              <Group gap={6}>
                <Text size="sm">{instance.cluster.displayName || instance.cluster.name}</Text>
                {instance.cluster.gpuModels.map((model) => (
                  <Badge key={model} size="xs" variant="light" color="gray">
                    {model}
                  </Badge>
                ))}
              </Group>
            ) : (
              "—"
            )}
          </DataList.ItemValue>
        </DataList.Item>
        <DataList.Item>
          <DataList.ItemLabel>Allocation</DataList.ItemLabel>
          <DataList.ItemValue>
            <AllocationBadge allocation={instance.allocationType} />
          </DataList.ItemValue>
        </DataList.Item>
        <DataList.Item>
          <DataList.ItemLabel>Sharing</DataList.ItemLabel>
          <DataList.ItemValue>
            <SharingBadge sharing={instance.sharing} />
          </DataList.ItemValue>
        </DataList.Item>
        <DataList.Item>
          <DataList.ItemLabel>Created</DataList.ItemLabel>
          <DataList.ItemValue>{when(instance.createdAt)}</DataList.ItemValue>
        </DataList.Item>
        <DataList.Item>
          <DataList.ItemLabel>Updated</DataList.ItemLabel>
          <DataList.ItemValue>{when(instance.updatedAt)}</DataList.ItemValue>
        </DataList.Item>
      </DataList>
    </Panel>
  );
}
