import { graphql } from "../../gql";

export const UsersListDocument = graphql(`
  query UsersList($search: String, $first: Int, $after: String) {
    users(search: $search, first: $first, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        cursor
        node {
          id
          username
          isPlatformAdmin
          disabled
          createdAt
          lastSignInAt
          memberships {
            role
            project {
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

export const UserCreateDocument = graphql(`
  mutation UserCreate($input: CreateUserInput!) {
    createUser(input: $input) {
      user {
        id
        username
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const UserSetDisabledDocument = graphql(`
  mutation UserSetDisabled($input: SetUserDisabledInput!) {
    setUserDisabled(input: $input) {
      user {
        id
        disabled
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const UserDeleteDocument = graphql(`
  mutation UserDelete($username: String!) {
    deleteUser(username: $username) {
      deletedId
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const PasswordResetDocument = graphql(`
  mutation PasswordReset($input: ResetPasswordInput!) {
    resetPassword(input: $input) {
      user {
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

export const PasswordChangeDocument = graphql(`
  mutation PasswordChange($input: ChangePasswordInput!) {
    changePassword(input: $input) {
      user {
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

export const AdminProjectsDocument = graphql(`
  query AdminProjects {
    projects {
      id
      name
      displayName
      createdAt
      instanceCount
      members {
        username
      }
    }
  }
`);

export const ProjectCreateDocument = graphql(`
  mutation ProjectCreate($input: CreateProjectInput!) {
    createProject(input: $input) {
      project {
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

export const ProjectRenameDocument = graphql(`
  mutation ProjectRename($input: RenameProjectInput!) {
    renameProject(input: $input) {
      project {
        id
        displayName
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const ProjectDeleteDocument = graphql(`
  mutation ProjectDelete($name: String!) {
    deleteProject(name: $name) {
      deletedId
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const ProjectMembersDocument = graphql(`
  query ProjectMembers($project: String!) {
    project(name: $project) {
      id
      name
      displayName
      members {
        username
        role
        disabled
        addedAt
      }
    }
  }
`);

export const MemberSetDocument = graphql(`
  mutation MemberSet($input: SetProjectMemberInput!) {
    setProjectMember(input: $input) {
      membership {
        role
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const MemberRemoveDocument = graphql(`
  mutation MemberRemove($input: RemoveProjectMemberInput!) {
    removeProjectMember(input: $input) {
      deletedId
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const ApiTokensDocument = graphql(`
  query ApiTokens {
    apiTokens {
      id
      name
      createdAt
      lastUsedAt
      expiresAt
    }
  }
`);

export const ApiTokenCreateDocument = graphql(`
  mutation ApiTokenCreate($input: CreateApiTokenInput!) {
    createApiToken(input: $input) {
      token
      apiToken {
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

export const ApiTokenRevokeDocument = graphql(`
  mutation ApiTokenRevoke($id: ID!) {
    revokeApiToken(id: $id) {
      deletedId
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const SshPublicKeysDocument = graphql(`
  query SshPublicKeys {
    sshPublicKeys {
      id
      name
      keyType
      bits
      fingerprint
      createdAt
    }
  }
`);

export const SshPublicKeyAddDocument = graphql(`
  mutation SshPublicKeyAdd($input: AddSshPublicKeyInput!) {
    addSshPublicKey(input: $input) {
      sshPublicKey {
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

export const SshPublicKeyDeleteDocument = graphql(`
  mutation SshPublicKeyDelete($id: ID!) {
    deleteSshPublicKey(id: $id) {
      deletedId
      userErrors {
        field
        message
        code
      }
    }
  }
`);
