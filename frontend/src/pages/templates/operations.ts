import { graphql } from "../../gql";

/** Operations of the Environment Templates studio pages (names prefixed "EnvTemplate"). */

export const EnvTemplatesListDocument = graphql(`
  query EnvTemplatesList($project: String!, $search: String) {
    environmentTemplates(project: $project, search: $search) {
      id
      name
      displayName
      description
      builtIn
      updatedAt
      project {
        id
        name
      }
      versions {
        id
        version
        state
      }
    }
  }
`);

export const EnvTemplateDetailDocument = graphql(`
  query EnvTemplateDetail($id: ID!) {
    environmentTemplate(id: $id) {
      id
      name
      displayName
      description
      builtIn
      createdAt
      updatedAt
      project {
        id
        name
        displayName
      }
      versions {
        id
        version
        state
        createdAt
        resources
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
          value
        }
      }
    }
  }
`);

/** The defaults of a template's versions with the sensitive ones revealed: what Add Version copies
 * from a version (the API shows them only to the template's admins, and only when asked). */
export const EnvTemplateRevealedDefaultsDocument = graphql(`
  query EnvTemplateRevealedDefaults($id: ID!) {
    environmentTemplate(id: $id) {
      id
      versions {
        id
        inputs(reveal: true) {
          name
          default
        }
      }
    }
  }
`);

export const EnvTemplateCreateDocument = graphql(`
  mutation EnvTemplateCreate($input: CreateEnvironmentTemplateInput!) {
    createEnvironmentTemplate(input: $input) {
      environmentTemplate {
        id
        name
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const EnvTemplateUpdateDocument = graphql(`
  mutation EnvTemplateUpdate($input: UpdateEnvironmentTemplateInput!) {
    updateEnvironmentTemplate(input: $input) {
      environmentTemplate {
        id
        displayName
        description
        updatedAt
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const EnvTemplateDeleteDocument = graphql(`
  mutation EnvTemplateDelete($id: ID!) {
    deleteEnvironmentTemplate(id: $id) {
      deletedId
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const EnvTemplateAddVersionDocument = graphql(`
  mutation EnvTemplateAddVersion($input: AddEnvironmentTemplateVersionInput!) {
    addEnvironmentTemplateVersion(input: $input) {
      version {
        id
        version
        state
        # The template too: its cached pages (a first version's "No versions yet") are refetched.
        template {
          id
          updatedAt
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

export const EnvTemplateSetVersionStateDocument = graphql(`
  mutation EnvTemplateSetVersionState($id: ID!, $state: VersionState!) {
    setEnvironmentTemplateVersionState(id: $id, state: $state) {
      version {
        id
        state
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);
