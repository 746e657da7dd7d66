import { graphql } from "../../gql";

export const ProjectQuotaDocument = graphql(`
  query ProjectQuota($project: String!) {
    projectQuota(project: $project) {
      project
      quota {
        gpus
        gpuLimits {
          vendor
          model
          count
        }
        cpu
        memory
        instances
      }
      usage {
        key
        label
        used
        limit
        usedShown
        limitShown
      }
      members {
        username
        quota {
          gpus
          gpuLimits {
            vendor
            model
            count
          }
          cpu
          memory
          instances
        }
        usage {
          key
          label
          used
          limit
          usedShown
          limitShown
        }
      }
    }
  }
`);

export const SetQuotaDocument = graphql(`
  mutation SetQuota($input: SetQuotaInput!) {
    setQuota(input: $input) {
      quota {
        project
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const ClearQuotaDocument = graphql(`
  mutation ClearQuota($project: String!, $username: String) {
    clearQuota(project: $project, username: $username) {
      quota {
        project
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const GpuCapacityDocument = graphql(`
  query GpuCapacity($project: String, $cluster: ID) {
    gpuCapacity(project: $project, cluster: $cluster) {
      clusterId
      clusterName
      displayName
      models {
        vendor
        model
        capacity
        allocated
        free
        others
        holders {
          project
          owner
          instanceId
          instanceName
          gpus
        }
      }
    }
  }
`);
