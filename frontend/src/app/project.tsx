import { useParams } from "react-router-dom";

import { roleIn, useAuth } from "./auth";

/** The project in the URL (/p/:project/...) and what the caller may do in it. */
export function useProject(): { project: string; role: "ADMIN" | "MEMBER" | null; isAdmin: boolean } {
  const { project = "" } = useParams();
  const { me } = useAuth();
  const role = roleIn(me, project);
  return { project, role, isAdmin: role === "ADMIN" };
}

const LAST_PROJECT = "gpupaas.project";

export function rememberProject(project: string): void {
  try {
    window.localStorage.setItem(LAST_PROJECT, project);
  } catch {
    /* private mode: nothing to remember */
  }
}

export function lastProject(): string | null {
  try {
    return window.localStorage.getItem(LAST_PROJECT);
  } catch {
    return null;
  }
}
