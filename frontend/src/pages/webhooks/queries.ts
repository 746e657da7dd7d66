import { graphql } from "../../gql";

export const WebhookFieldsFragment = graphql(`
  fragment WebhookFields on Webhook {
    id
    url
    events
    enabled
    createdAt
    updatedAt
  }
`);

export const WebhooksListDocument = graphql(`
  query WebhooksList($project: String!) {
    webhooks(project: $project) {
      ...WebhookFields
    }
  }
`);

export const WebhookLogDocument = graphql(`
  query WebhookLog($id: ID!, $first: Int, $after: String) {
    webhook(id: $id) {
      ...WebhookFields
      deliveries(first: $first, after: $after) {
        totalCount
        pageInfo {
          hasNextPage
          endCursor
        }
        edges {
          node {
            id
            event
            eventId
            status
            attemptCount
            nextAttemptAt
            lastError
            createdAt
            finishedAt
            attempts {
              number
              startedAt
              durationMs
              statusCode
              error
              responseExcerpt
            }
          }
        }
      }
    }
  }
`);

export const WebhookCreateDocument = graphql(`
  mutation WebhookCreate($input: CreateWebhookInput!) {
    createWebhook(input: $input) {
      webhook {
        ...WebhookFields
      }
      secret
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const WebhookUpdateDocument = graphql(`
  mutation WebhookUpdate($input: UpdateWebhookInput!) {
    updateWebhook(input: $input) {
      webhook {
        ...WebhookFields
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const WebhookDeleteDocument = graphql(`
  mutation WebhookDelete($id: ID!) {
    deleteWebhook(id: $id) {
      deletedId
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const WebhookTestDocument = graphql(`
  mutation WebhookTest($id: ID!) {
    sendWebhookTestEvent(id: $id) {
      delivery {
        id
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

export const WebhookRotateDocument = graphql(`
  mutation WebhookRotate($id: ID!) {
    rotateWebhookSecret(id: $id) {
      webhook {
        ...WebhookFields
      }
      secret
      userErrors {
        field
        message
        code
      }
    }
  }
`);
