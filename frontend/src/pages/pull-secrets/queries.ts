import { graphql } from "../../gql";

export const PullSecretFieldsFragment = graphql(`
  fragment PullSecretFields on ImagePullSecret {
    id
    name
    registry
    username
    updatedAt
  }
`);

export const PullSecretsListDocument = graphql(`
  query PullSecretsList($project: String!) {
    imagePullSecrets(project: $project) {
      ...PullSecretFields
    }
  }
`);

export const PullSecretCreateDocument = graphql(`
  mutation PullSecretCreate($input: CreateImagePullSecretInput!) {
    createImagePullSecret(input: $input) {
      imagePullSecret {
        ...PullSecretFields
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const PullSecretUpdateDocument = graphql(`
  mutation PullSecretUpdate($input: UpdateImagePullSecretInput!) {
    updateImagePullSecret(input: $input) {
      imagePullSecret {
        ...PullSecretFields
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const PullSecretDeleteDocument = graphql(`
  mutation PullSecretDelete($id: ID!) {
    deleteImagePullSecret(id: $id) {
      deletedId
      userErrors {
        field
        message
        code
      }
    }
  }
`);
