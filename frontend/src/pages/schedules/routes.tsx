import type { RouteObject } from "react-router-dom";

import { SchedulesPage } from "./SchedulesPage";

// Pages of this area, under /p/:project/ (every member reads; admins create and delete).
export const routes: RouteObject[] = [{ path: "schedules", element: <SchedulesPage /> }];
