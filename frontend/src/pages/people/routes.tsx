import type { RouteObject } from "react-router-dom";

import { AdminOnly } from "../../app/Layout";
import { AccountPage } from "./AccountPage";
import { PlatformAdminOnly } from "./common";
import { MembersPage } from "./MembersPage";
import { ProjectsAdminPage } from "./ProjectsAdminPage";
import { UsersPage } from "./UsersPage";

// Pages of this area, under /p/:project/ so the frame and the project switcher stay:
// Administration (platform admins), a project's Members (its admins), one's own Account (everyone).
export const routes: RouteObject[] = [
  { path: "admin/users", element: <PlatformAdminOnly><UsersPage /></PlatformAdminOnly> },
  { path: "admin/projects", element: <PlatformAdminOnly><ProjectsAdminPage /></PlatformAdminOnly> },
  { path: "studio/members", element: <AdminOnly><MembersPage /></AdminOnly> },
  { path: "account", element: <AccountPage /> },
];
