import { graphql } from "../../gql";

export const ClusterFieldsFragment = graphql(`
  fragment ClusterFields on Cluster {
    id
    name
    displayName
    driver
    isDefault
    inCluster
    hasKubeconfig
    accessAddress
    gpuResourceNames {
      vendor
      resourceName
    }
    gpuResources {
      resourceName
      gpuModel
      partition
      count
    }
    status
    statusMessage
    serverVersion
    nodes {
      name
      cpu
      memory
      gpuResource
      gpuCount
      gpuModel
    }
    checkedAt
    createdAt
    updatedAt
  }
`);

export const ClustersListDocument = graphql(`
  query ClustersList {
    clusters {
      ...ClusterFields
    }
  }
`);

export const ClusterDetailDocument = graphql(`
  query ClusterDetail($id: ID!) {
    cluster(id: $id) {
      ...ClusterFields
    }
  }
`);

export const ClusterCreateDocument = graphql(`
  mutation ClusterCreate($input: CreateClusterInput!) {
    createCluster(input: $input) {
      cluster {
        ...ClusterFields
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const ClusterUpdateDocument = graphql(`
  mutation ClusterUpdate($input: UpdateClusterInput!) {
    updateCluster(input: $input) {
      cluster {
        ...ClusterFields
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const ClusterCheckDocument = graphql(`
  mutation ClusterCheck($id: ID!) {
    checkCluster(id: $id) {
      cluster {
        ...ClusterFields
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const ClusterDeleteDocument = graphql(`
  mutation ClusterDelete($id: ID!) {
    deleteCluster(id: $id) {
      deletedId
      userErrors {
        field
        message
        code
      }
    }
  }
`);
