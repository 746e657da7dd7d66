import { graphql } from "../../gql";

export const AuditLogDocument = graphql(`
  query AuditLog($filter: AuditLogFilter, $first: Int, $after: String) {
    auditLog(filter: $filter, first: $first, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          id
          at
          actorKind
          actorName
          address
          credentialKind
          credentialName
          action
          objectType
          objectId
          objectName
          project
          outcome
          errorCode
          errorMessage
          changes {
            field
            before
            after
          }
        }
      }
    }
  }
`);
