import { graphql } from "../../gql";

export const SchedulesDocument = graphql(`
  query Schedules($project: String!) {
    schedules(project: $project) {
      id
      name
      action
      appliesTo
      days
      timeOfDay
      timeZone
      nextRunAt
      lastRunAt
      lastResult
    }
  }
`);

export const CreateScheduleDocument = graphql(`
  mutation CreateSchedule($input: CreateScheduleInput!) {
    createSchedule(input: $input) {
      schedule {
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

export const DeleteScheduleDocument = graphql(`
  mutation DeleteSchedule($id: ID!) {
    deleteSchedule(id: $id) {
      deletedId
      userErrors {
        field
        message
        code
      }
    }
  }
`);
