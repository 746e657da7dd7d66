import type { RouteObject } from "react-router-dom";

import { AdminOnly } from "../../app/Layout";
import { AuditLogPage } from "./AuditLogPage";

// Pages of this area, under /p/:project/ (studio: project admins, scoped; platform admins, all).
export const routes: RouteObject[] = [{ path: "studio/audit", element: <AdminOnly><AuditLogPage /></AdminOnly> }];
