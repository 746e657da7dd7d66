import { graphql } from "../../gql";

/** Operations of the Compute Profiles studio pages (names prefixed "Profile"/"Profiles"). */

export const PROFILES_PAGE_SIZE = 20;

export const ProfilesListDocument = graphql(`
  query ProfilesList($project: String!, $search: String, $first: Int, $after: String) {
    computeProfiles(project: $project, search: $search, first: $first, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        cursor
        node {
          id
          name
          displayName
          createdAt
          allocationType
          resources {
            cpu
            memory
            storage
            gpuCount
            gpuVendor
            gpuModel
          }
          environmentTemplate {
            id
            name
            displayName
          }
          environmentTemplateVersion {
            id
            version
          }
          sharing {
            mode
            projects {
              id
              name
              displayName
            }
          }
        }
      }
    }
  }
`);

export const ProfileDetailDocument = graphql(`
  query ProfileDetail($id: ID!) {
    computeProfile(id: $id) {
      id
      name
      displayName
      description
      allocationType
      createdAt
      updatedAt
      iconUrl
      readme
      readmeHtml
      project {
        id
        name
      }
      timeLimits {
        autoStopMinutes
        maxLifetimeMinutes
      }
      resources {
        cpu
        memory
        storage
        gpuCount
        gpuVendor
        gpuModel
      }
      labels {
        key
        value
      }
      annotations {
        key
        value
      }
      inputSettings {
        name
        value
        required
        override
        allowedValues
      }
      outputSettings {
        name
        displayName
        visible
      }
      cluster {
        id
        name
        displayName
      }
      environmentTemplate {
        id
        name
        displayName
        builtIn
      }
      environmentTemplateVersion {
        id
        version
        state
        inputs {
          name
          type
          description
          required
          default
          options
          sensitive
        }
        outputs {
          name
          description
        }
      }
      sharing {
        mode
        projects {
          id
          name
          displayName
        }
      }
    }
  }
`);

/** What the wizard offers: the templates (with their versions' inputs and outputs) and clusters
 * (project admins see of a cluster its name and GPU models; only platform admins see more). */
export const ProfileWizardOptionsDocument = graphql(`
  query ProfileWizardOptions($project: String!) {
    environmentTemplates(project: $project) {
      id
      name
      displayName
      builtIn
      versions {
        id
        version
        state
        createdAt
        inputs {
          name
          type
          description
          required
          default
          options
          pattern
          min
          max
          sensitive
        }
        outputs {
          name
          description
        }
      }
    }
    clusters {
      id
      name
      displayName
      gpuModels
    }
  }
`);

export const ProfileCreateDocument = graphql(`
  mutation ProfileCreate($input: CreateComputeProfileInput!) {
    createComputeProfile(input: $input) {
      computeProfile {
        id
        name
      }
      userErrors {
        field
        message
        code
      }
      warnings {
        message
      }
    }
  }
`);

export const ProfileUpdateDocument = graphql(`
  mutation ProfileUpdate($input: UpdateComputeProfileInput!) {
    updateComputeProfile(input: $input) {
      computeProfile {
        id
        name
        readmeHtml
      }
      userErrors {
        field
        message
        code
      }
      warnings {
        message
      }
    }
  }
`);

export const ProfileDeleteDocument = graphql(`
  mutation ProfileDelete($id: ID!) {
    deleteComputeProfile(id: $id) {
      deletedId
      userErrors {
        field
        message
        code
      }
    }
  }
`);
