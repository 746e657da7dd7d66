import type { RouteObject } from "react-router-dom";

import { AdminOnly } from "../../app/Layout";
import { PullSecretsPage } from "./PullSecretsPage";

// Pages of this area, under /p/:project/ (studio: the project's admins).
export const routes: RouteObject[] = [{ path: "studio/pull-secrets", element: <AdminOnly><PullSecretsPage /></AdminOnly> }];
