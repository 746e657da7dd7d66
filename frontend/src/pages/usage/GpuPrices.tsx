import { ActionIcon, Button, Card, Group, Select, Stack, Table, Text, TextInput, Title } from "@mantine/core";
import { IconTrash } from "@tabler/icons-react";
import { useState, type FormEvent } from "react";
import { useMutation, useQuery } from "urql";

import { describeError, errorsByField } from "../../components/errors";
import { graphql } from "../../gql";
import type { Vendor } from "../../gql/graphql";

export const GpuPricesDocument = graphql(`
  query GpuPrices {
    gpuPrices {
      id
      vendor
      model
      pricePerGpuHour
    }
  }
`);

export const SetGpuPriceDocument = graphql(`
  mutation SetGpuPrice($input: SetGpuPriceInput!) {
    setGpuPrice(input: $input) {
      gpuPrice {
        id
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const DeleteGpuPriceDocument = graphql(`
  mutation DeleteGpuPrice($id: ID!) {
    deleteGpuPrice(id: $id) {
      deletedId
      userErrors {
        field
        message
        code
      }
    }
  }
`);

const VENDORS: Vendor[] = ["NVIDIA", "AMD", "INTEL", "ASCEND"];

/** Platform admins: the price of one GPU-hour per GPU model, which gives usage reports a cost. */
export function GpuPrices({ onChange }: { onChange: () => void }) {
  const [{ data, error }, refetch] = useQuery({ query: GpuPricesDocument, requestPolicy: "cache-and-network" });
  const [saving, setPrice] = useMutation(SetGpuPriceDocument);
  const [, deletePrice] = useMutation(DeleteGpuPriceDocument);
  const [vendor, setVendor] = useState<Vendor>("NVIDIA");
  const [model, setModel] = useState("");
  const [price, setPriceText] = useState("");
  const [errors, setErrors] = useState<Record<string, string>>({});

  const changed = () => {
    refetch({ requestPolicy: "network-only" });
    onChange();
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const result = await setPrice({ input: { vendor, model: model.trim(), pricePerGpuHour: price.trim() } });
    const problems = result.data?.setGpuPrice.userErrors ?? [];
    if (result.error || problems.length > 0) {
      setErrors(result.error ? { "": describeError(result.error) ?? "The price could not be saved." } : errorsByField(problems));
      return;
    }
    setErrors({});
    setModel("");
    setPriceText("");
    changed();
  };

  return (
    <Card withBorder>
      <Title order={4}>GPU prices</Title>
      <Text size="sm" c="dimmed" mb="sm">
        What one GPU-hour costs, per GPU model (a price without a model is the vendor's for every model without its own). Reports
        multiply GPU-hours by it.
      </Text>
      {error && !data ? <Text c="red">{describeError(error) ?? "The prices could not be loaded."}</Text> : null}
      {data && data.gpuPrices.length > 0 && (
        <Table aria-label="GPU prices" mb="sm">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Vendor</Table.Th>
              <Table.Th>Model</Table.Th>
              <Table.Th ta="right">Per GPU-hour</Table.Th>
              <Table.Th />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {data.gpuPrices.map((p) => (
              <Table.Tr key={p.id}>
                <Table.Td>{p.vendor}</Table.Td>
                <Table.Td>{p.model || "every model"}</Table.Td>
                <Table.Td ta="right">{p.pricePerGpuHour}</Table.Td>
                <Table.Td ta="right">
                  <ActionIcon
                    variant="subtle"
                    color="red"
                    aria-label={`Remove the price of ${p.vendor} ${p.model || "every model"}`}
                    onClick={async () => {
                      await deletePrice({ id: p.id });
                      changed();
                    }}
                  >
                    <IconTrash size={16} />
                  </ActionIcon>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      <form onSubmit={submit} aria-label="Set a GPU price">
        <Stack gap="xs">
          <Group align="flex-start">
            <Select
              label="Vendor"
              allowDeselect={false}
              data={VENDORS}
              value={vendor}
              onChange={(value) => value && setVendor(value as Vendor)}
              error={errors.vendor}
              w={140}
            />
            <TextInput label="GPU model" placeholder="H100 (empty: every model)" value={model} onChange={(e) => setModel(e.currentTarget.value)} error={errors.model} />
            <TextInput
              label="Price per GPU-hour"
              placeholder="2.50"
              inputMode="decimal"
              required
              value={price}
              onChange={(e) => setPriceText(e.currentTarget.value)}
              error={errors.pricePerGpuHour}
            />
            <Button type="submit" mt={25} loading={saving.fetching}>
              Set price
            </Button>
          </Group>
          {errors[""] && (
            <Text c="red" size="sm" role="alert">
              {errors[""]}
            </Text>
          )}
        </Stack>
      </form>
    </Card>
  );
}
