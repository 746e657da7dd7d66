import { graphql } from "../../gql";

export const InstanceTemplateFieldsFragment = graphql(`
  fragment InstanceTemplateFields on InstanceTemplate {
    id
    name
    displayName
    description
    vendor
    image
    imagePullPolicy
    command
    containerDisk
    mountPath
    gpuPartition
    imagePullSecret
    ssh {
      port
      user
    }
    ports {
      name
      port
      protocol
      accessParams {
        key
        value
      }
    }
    env {
      key
      value
    }
    storage {
      mode
      size
      reclaim
      claimName
      storageClass
    }
    resources {
      cpuRequest
      cpuLimit
      memoryRequest
      memoryLimit
    }
    builtIn
    createdAt
    updatedAt
    project {
      id
      name
      displayName
    }
  }
`);

export const InstanceTemplatesListDocument = graphql(`
  query InstanceTemplatesList($project: String!, $search: String, $vendor: Vendor) {
    instanceTemplates(project: $project, search: $search, vendor: $vendor) {
      ...InstanceTemplateFields
    }
  }
`);

export const InstanceTemplateDetailDocument = graphql(`
  query InstanceTemplateDetail($id: ID!) {
    instanceTemplate(id: $id) {
      ...InstanceTemplateFields
    }
  }
`);

export const InstanceTemplateCreateDocument = graphql(`
  mutation InstanceTemplateCreate($input: CreateInstanceTemplateInput!) {
    createInstanceTemplate(input: $input) {
      instanceTemplate {
        ...InstanceTemplateFields
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const InstanceTemplateUpdateDocument = graphql(`
  mutation InstanceTemplateUpdate($input: UpdateInstanceTemplateInput!) {
    updateInstanceTemplate(input: $input) {
      instanceTemplate {
        ...InstanceTemplateFields
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const InstanceTemplateDeleteDocument = graphql(`
  mutation InstanceTemplateDelete($id: ID!) {
    deleteInstanceTemplate(id: $id) {
      deletedId
      userErrors {
        field
        message
        code
      }
    }
  }
`);
