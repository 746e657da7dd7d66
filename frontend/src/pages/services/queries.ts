import { graphql } from "../../gql";

export const ServiceRowFieldsFragment = graphql(`
  fragment ServiceRowFields on ServiceInstance {
    id
    name
    displayName
    templateName
    gpuCount
    status
    statusMessage
    createdAt
    updatedAt
    owner {
      username
    }
    connect {
      port
      url
    }
    actions {
      name
      allowed
      reason
    }
    template {
      id
      displayName
      vendor
    }
    computeInstance {
      id
      name
      displayName
      resources {
        gpuVendor
        gpuModel
      }
    }
  }
`);

export const ServicesListDocument = graphql(`
  query ServicesList($project: String!, $computeInstance: ID, $mine: Boolean, $first: Int, $after: String) {
    serviceInstances(project: $project, computeInstance: $computeInstance, mine: $mine, first: $first, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        cursor
        node {
          ...ServiceRowFields
        }
      }
    }
  }
`);

export const ServicesComputeInstancesDocument = graphql(`
  query ServicesComputeInstances($project: String!) {
    computeInstances(project: $project, first: 100) {
      totalCount
      edges {
        node {
          id
          name
          displayName
          status
          project {
            name
          }
          owner {
            username
          }
          actions {
            name
            allowed
          }
          resources {
            gpuCount
            gpuVendor
            gpuModel
          }
          cluster {
            gpuPartitions {
              resourceName
              profile
              gpuModel
            }
          }
          services {
            id
            name
            gpuCount
            status
          }
        }
      }
    }
  }
`);

export const ServiceLaunchTemplatesDocument = graphql(`
  query ServiceLaunchTemplates($project: String!) {
    instanceTemplates(project: $project) {
      id
      name
      displayName
      description
      vendor
      image
      builtIn
      gpuPartition
      imagePullSecret
      command
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
      project {
        name
      }
    }
  }
`);

export const ServiceDetailDocument = graphql(`
  query ServiceDetail($id: ID!) {
    serviceInstance(id: $id) {
      ...ServiceRowFields
      image
      imagePullPolicy
      gpuPartition
      imagePullSecret
      command
      containerDisk
      mountPath
      editRefusal
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
      sshAccess {
        port
        user
      }
      ssh {
        command
        hostKeyFingerprint
      }
      sshKeys {
        id
        name
        keyType
        fingerprint
        createdAt
      }
      project {
        name
      }
      computeInstance {
        id
        status
        resources {
          gpuCount
          gpuVendor
          gpuModel
        }
        cluster {
          id
          name
          displayName
        }
      }
    }
  }
`);

/** `$after`: the client's, after a reconnect (graphql/client.ts); pages leave it out. */
export const ServiceStatusLiveDocument = graphql(`
  subscription ServiceStatusLive($id: ID!, $after: String) {
    serviceInstanceStatus(id: $id, after: $after) {
      status
      message
      at
      cursor
      source
      instance {
        id
        status
        statusMessage
        updatedAt
        connect {
          port
          url
        }
        actions {
          name
          allowed
          reason
        }
      }
    }
  }
`);

export const ServiceCreateDocument = graphql(`
  mutation ServiceCreate($input: CreateServiceInstanceInput!) {
    createServiceInstance(input: $input) {
      serviceInstance {
        id
        name
        displayName
        status
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const ServiceStartDocument = graphql(`
  mutation ServiceStart($id: ID!) {
    startServiceInstance(id: $id) {
      serviceInstance {
        id
        status
        statusMessage
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const ServiceStopDocument = graphql(`
  mutation ServiceStop($id: ID!) {
    stopServiceInstance(id: $id) {
      serviceInstance {
        id
        status
        statusMessage
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const ServiceRestartDocument = graphql(`
  mutation ServiceRestart($id: ID!) {
    restartServiceInstance(id: $id) {
      serviceInstance {
        id
        status
        statusMessage
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const ServiceDeleteDocument = graphql(`
  mutation ServiceDelete($id: ID!) {
    deleteServiceInstance(id: $id) {
      deletedId
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const ServicePullSecretsDocument = graphql(`
  query ServicePullSecrets($project: String!) {
    imagePullSecrets(project: $project) {
      id
      name
      registry
    }
  }
`);

/** The container's log, followed live in chunks (Logs panel). */
export const ServiceLogsLiveDocument = graphql(`
  subscription ServiceLogsLive($id: ID!, $container: String, $tailLines: Int, $follow: Boolean!, $previous: Boolean) {
    serviceInstanceLogs(id: $id, container: $container, tailLines: $tailLines, follow: $follow, previous: $previous) {
      containers
      lines {
        at
        text
        pod
        container
      }
    }
  }
`);

export const ServiceUpdateDocument = graphql(`
  mutation ServiceUpdate($input: UpdateServiceInstanceInput!) {
    updateServiceInstance(input: $input) {
      serviceInstance {
        id
        displayName
        command
        gpuCount
        editRefusal
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
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

/** The container's log as a file (the Logs panel's download). */
export const ServiceLogDownloadDocument = graphql(`
  query ServiceLogDownload($id: ID!, $container: String, $previous: Boolean) {
    serviceInstanceLogs(id: $id, container: $container, previous: $previous) {
      text
    }
  }
`);

export const ServiceNamespaceClaimsDocument = graphql(`
  query ServiceNamespaceClaims($id: ID!) {
    computeInstance(id: $id) {
      id
      namespaceUsage {
        volumeClaims {
          name
          size
          serviceId
        }
      }
    }
  }
`);

export const ServiceSshKeyAddDocument = graphql(`
  mutation ServiceSshKeyAdd($input: AddServiceInstanceSshKeyInput!) {
    addServiceInstanceSshKey(input: $input) {
      sshKey {
        id
        name
        fingerprint
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const ServiceSshKeyDeleteDocument = graphql(`
  mutation ServiceSshKeyDelete($id: ID!) {
    deleteServiceInstanceSshKey(id: $id) {
      deletedId
      userErrors {
        field
        message
        code
      }
    }
  }
`);
