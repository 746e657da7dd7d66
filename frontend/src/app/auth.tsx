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

/** How one may sign in here: asked by the sign-in page, before anybody is signed in. */
export const SignInOptionsDocument = graphql(`
  query SignInOptions {
    signInOptions {
      oidc {
        name
        loginUrl
      }
    }
  }
`);

/** What /auth/oidc/callback's `?oidc_error=` codes mean (api/oidc.py sends only these). */
export const OIDC_ERRORS: Record<string, string> = {
  cancelled: "Sign-in was cancelled at the identity provider.",
  refused: "The identity provider refused the sign-in. Try again, or ask your administrator.",
  expired: "The sign-in took too long or was started in another browser. Try again.",
  state: "The sign-in could not be verified (it does not match this browser's). Try again.",
  unavailable: "The identity provider cannot be reached right now. Try again later, or sign in with a password.",
  invalid_token: "The identity provider's answer could not be verified. Ask your administrator.",
  disabled: "This account is disabled: ask a platform admin to enable it.",
};

export function oidcErrorMessage(code: string | null): string | null {
  if (!code) return null;
  return OIDC_ERRORS[code] ?? "Single sign-on failed. Try again.";
}

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
