import type { RouteObject } from "react-router-dom";

import { DashboardPage } from "./DashboardPage";

// Pages of this area, under /p/:project/.
export const routes: RouteObject[] = [{ path: "dashboard", element: <DashboardPage /> }];
