/* The launch form's choices of a GPU partition and an image pull secret. */
import { Select, SimpleGrid } from "@mantine/core";
import type { Dispatch } from "react";
import { useQuery } from "urql";

import { Section } from "../../components/Section";
import { partitionsFor, type Instance, type LaunchAction, type LaunchState, type Template } from "./launchModel";
import { ServicePullSecretsDocument } from "./queries";

interface ChoicesProps {
  state: LaunchState;
  dispatch: Dispatch<LaunchAction>;
  instance?: Instance;
  template?: Template;
  project: string;
}

/** A partition of the instance's GPUs (NVIDIA MIG), and the registry credentials to pull with. */
export function ChoicesSection({ state, dispatch, instance, template, project }: ChoicesProps) {
  const [{ data }] = useQuery({ query: ServicePullSecretsDocument, variables: { project } });
  const partitions = partitionsFor(instance);
  const secrets = data?.imagePullSecrets ?? [];
  const showPartitions = template?.vendor === "NVIDIA" && (partitions.length > 0 || state.gpuPartition !== "");
  const known = (value: string, values: string[]) => (value && !values.includes(value) ? [value] : []);
  return (
    <Section title="GPU partition and registry">
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        {showPartitions && (
          <Select
            label="GPU partition"
            description="Whole GPUs, or devices of a MIG profile the cluster's nodes of this model advertise: the GPU count is then a number of devices."
            data={[
              { value: "", label: "Whole GPUs" },
              ...partitions.map((p) => ({ value: p.resourceName, label: `${p.profile} (${p.resourceName})` })),
              ...known(state.gpuPartition, partitions.map((p) => p.resourceName)).map((v) => ({ value: v, label: v })),
            ]}
            value={state.gpuPartition}
            allowDeselect={false}
            onChange={(value) => dispatch({ type: "setGpuPartition", gpuPartition: value ?? "" })}
            error={state.errors.gpuPartition}
          />
        )}
        <Select
          label="Image pull secret"
          description="The project's registry credentials for a private image."
          data={[
            { value: "", label: "None (a public image)" },
            ...secrets.map((s) => ({ value: s.name, label: `${s.name} (${s.registry})` })),
            ...known(state.pullSecret, secrets.map((s) => s.name)).map((v) => ({ value: v, label: v })),
          ]}
          value={state.pullSecret}
          allowDeselect={false}
          onChange={(value) => dispatch({ type: "setPullSecret", pullSecret: value ?? "" })}
          error={state.errors.imagePullSecret}
        />
      </SimpleGrid>
    </Section>
  );
}
