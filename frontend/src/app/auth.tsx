import { createContext, useContext, type ReactNode } from "react";
import { useMutation, useQuery } from "urql";

import { graphql } from "../gql";
import { leaveFor } from "../graphql/client";
import type { MeQuery, ProjectsQuery } from "../gql/graphql";

export const MeDocument = graphql(`
  query Me {
    me {
      id
      username
      isPlatformAdmin
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
`);

export const ProjectsDocument = graphql(`
  query Projects {
    projects {
      id
      name
      displayName
    }
  }
`);

export const LoginDocument = graphql(`
  mutation Login($username: String!, $password: String!) {
    login(username: $username, password: $password) {
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

export const LogoutDocument = graphql(`
  mutation Logout {
    logout
  }
`);

export type Me = NonNullable<MeQuery["me"]>;
export type ProjectSummary = ProjectsQuery["projects"][number];

interface Auth {
  me: Me | null;
  projects: ProjectSummary[];
  fetching: boolean;
  error: string | null;
  refresh: () => void;
  logout: () => Promise<void>;
}

const AuthContext = createContext<Auth | null>(null);

export function AuthProvider({ children }: { children: ReactNode }) {
  const [{ data, fetching, error }, refetch] = useQuery({ query: MeDocument, requestPolicy: "network-only" });
  const me = data?.me ?? null;
  // Signed in only: the projects the caller may see (every project for platform admins).
  const [projects, refetchProjects] = useQuery({ query: ProjectsDocument, pause: !me, requestPolicy: "cache-and-network" });
  const [, logoutMutation] = useMutation(LogoutDocument);
  const value: Auth = {
    me,
    projects: me ? (projects.data?.projects ?? []) : [],
    fetching: fetching || (!!me && !projects.data && projects.fetching),
    error: error ? error.message : projects.error ? projects.error.message : null,
    refresh: () => {
      refetch({ requestPolicy: "network-only" });
      if (me) refetchProjects({ requestPolicy: "network-only" });
    },
    logout: async () => {
      await logoutMutation({});
      // A full reload drops every cached answer and the signed-in websocket.
      leaveFor("/login");
    },
  };
  return <AuthContext.Provider value={value}>{children}</AuthContext.Provider>;
}

export function useAuth(): Auth {
  const auth = useContext(AuthContext);
  if (!auth) throw new Error("useAuth outside AuthProvider");
  return auth;
}

/** The caller's role in a project: platform admins are admins everywhere. */
export function roleIn(me: Me | null, project: string): "ADMIN" | "MEMBER" | null {
  if (!me) return null;
  if (me.isPlatformAdmin) return "ADMIN";
  const membership = me.memberships.find((m) => m.project.name === project);
  return membership ? membership.role : null;
}
