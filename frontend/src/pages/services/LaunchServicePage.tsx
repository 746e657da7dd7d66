import { Anchor, Breadcrumbs, Button, Group, Stack, Text, Title } from "@mantine/core";
import { IconRocket } from "@tabler/icons-react";
import { useReducer, type FormEvent } from "react";
import { Link, useNavigate, useSearchParams } from "react-router-dom";
import { useMutation, useQuery } from "urql";

import { useProject } from "../../app/project";
import { describeError, errorsByField } from "../../components/errors";
import { FormErrors } from "../../components/FormErrors";
import { EmptyState, ErrorState, Loading } from "../../components/states";
import { initialLaunch, launchInput, launchReducer, missingFields, PLACED, type Instance, type Template } from "./launchModel";
import { ChoicesSection } from "./LaunchChoices";
import { AdvancedSection, ServiceSection, TemplateSection, WhereSection } from "./LaunchServiceSections";
import { ServiceCreateDocument, ServiceLaunchTemplatesDocument, ServiceNamespaceClaimsDocument, ServicesComputeInstancesDocument } from "./queries";

/** "Launch service": loads the project's compute instances and the templates, then the form. */
export function LaunchServicePage() {
  const { project } = useProject();
  const [instancesResult, refetchInstances] = useQuery({
    query: ServicesComputeInstancesDocument,
    variables: { project },
    requestPolicy: "cache-and-network",
  });
  const [templatesResult, refetchTemplates] = useQuery({
    query: ServiceLaunchTemplatesDocument,
    variables: { project },
    requestPolicy: "cache-and-network",
  });

  const loadError = instancesResult.error ?? templatesResult.error;
  if (loadError && (!instancesResult.data || !templatesResult.data)) {
    return (
      <ErrorState
        message={describeError(loadError) ?? "Could not load the compute instances and templates."}
        onRetry={() => {
          refetchInstances({ requestPolicy: "network-only" });
          refetchTemplates({ requestPolicy: "network-only" });
        }}
      />
    );
  }
  if (!instancesResult.data || !templatesResult.data) return <Loading label="Loading compute instances and templates" />;

  const instances = instancesResult.data.computeInstances.edges.map((edge) => edge.node).filter((node) => node.project.name === project);
  if (!instances.some((i) => i.status === "SUCCESS")) {
    return (
      <Stack>
        <Title order={2}>Launch service</Title>
        <EmptyState
          title={instances.length === 0 ? "No compute instance yet" : "No deployed compute instance"}
          action={
            <Button component={Link} to={`/p/${project}/${instances.length === 0 ? "catalog" : "instances"}`}>
              {instances.length === 0 ? "Open the catalog" : "Go to compute instances"}
            </Button>
          }
        >
          Services run inside a deployed (Success) compute instance of this project.{" "}
          {instances.length === 0 ? "Launch one from the catalog first." : "None is deployed yet: deploy one, or wait until its deployment succeeds."}
        </EmptyState>
      </Stack>
    );
  }
  return <LaunchServiceForm project={project} instances={instances} templates={templatesResult.data.instanceTemplates} />;
}

function LaunchServiceForm({ project, instances, templates }: { project: string; instances: Instance[]; templates: readonly Template[] }) {
  const navigate = useNavigate();
  const [params] = useSearchParams();
  // ?computeInstance= and ?template= (from an instance's or a template's "Launch") preselect them.
  const [state, dispatch] = useReducer(launchReducer, null, () =>
    initialLaunch({ computeInstance: params.get("computeInstance"), template: params.get("template") }, instances, templates),
  );
  const [{ fetching: creating }, create] = useMutation(ServiceCreateDocument);
  const template = templates.find((t) => t.id === state.templateId);
  const instance = instances.find((i) => i.id === state.computeInstance);
  // The claims of the chosen compute instance's namespace, offered for an existing claim.
  const [claimsResult] = useQuery({
    query: ServiceNamespaceClaimsDocument,
    variables: { id: state.computeInstance ?? "" },
    pause: !state.computeInstance || state.storage.mode !== "EXISTING_CLAIM",
  });
  const claims = claimsResult.data?.computeInstance?.namespaceUsage?.volumeClaims;

  async function submit(event: FormEvent) {
    event.preventDefault();
    const missing = missingFields(state);
    dispatch({ type: "setErrors", errors: missing });
    if (Object.keys(missing).length) return;
    const result = await create({ input: launchInput(state, project, template) });
    const payload = result.data?.createServiceInstance;
    if (result.error || !payload) {
      dispatch({ type: "setErrors", errors: { "": describeError(result.error) ?? "No answer from the server." } });
      return;
    }
    if (payload.userErrors.length || !payload.serviceInstance) {
      dispatch({ type: "setErrors", errors: errorsByField(payload.userErrors) });
      return;
    }
    navigate(`/p/${project}/services/${payload.serviceInstance.id}`);
  }

  return (
    <Stack maw={1080}>
      <Breadcrumbs>
        <Anchor component={Link} to={`/p/${project}/services`}>
          Service Instances
        </Anchor>
        <Text>Launch</Text>
      </Breadcrumbs>
      <Title order={2}>Launch service</Title>
      <form onSubmit={submit} noValidate>
        <Stack>
          <WhereSection state={state} dispatch={dispatch} instances={instances} />
          <TemplateSection state={state} dispatch={dispatch} templates={templates} />
          <ServiceSection state={state} dispatch={dispatch} instance={instance} template={template} />
          <ChoicesSection state={state} dispatch={dispatch} instance={instance} template={template} project={project} />
          <AdvancedSection state={state} dispatch={dispatch} template={template} claims={claims} />
          <FormErrors title="Not launched" errors={state.errors} placed={PLACED} />
          <Group justify="flex-end">
            <Button variant="default" component={Link} to={`/p/${project}/services`}>
              Cancel
            </Button>
            <Button type="submit" loading={creating} leftSection={<IconRocket size={16} />}>
              {state.start ? "Launch" : "Create"}
            </Button>
          </Group>
        </Stack>
      </form>
    </Stack>
  );
}
