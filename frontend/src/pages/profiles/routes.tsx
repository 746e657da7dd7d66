import type { RouteObject } from "react-router-dom";

import { AdminOnly } from "../../app/Layout";
import { ProfileDetailPage } from "./ProfileDetailPage";
import { ProfilesListPage } from "./ProfilesListPage";
import { ProfileWizardPage } from "./ProfileWizardPage";

// Studio > Compute Profiles, under /p/:project/ (project admins only).
export const routes: RouteObject[] = [
  {
    path: "studio/profiles",
    element: (
      <AdminOnly>
        <ProfilesListPage />
      </AdminOnly>
    ),
  },
  {
    path: "studio/profiles/new",
    element: (
      <AdminOnly>
        <ProfileWizardPage />
      </AdminOnly>
    ),
  },
  {
    path: "studio/profiles/:id",
    element: (
      <AdminOnly>
        <ProfileDetailPage />
      </AdminOnly>
    ),
  },
  {
    path: "studio/profiles/:id/edit",
    element: (
      <AdminOnly>
        <ProfileWizardPage />
      </AdminOnly>
    ),
  },
];
