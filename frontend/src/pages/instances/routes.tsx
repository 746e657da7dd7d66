import type { RouteObject } from "react-router-dom";

import { EditInstancePage } from "./EditInstancePage";
import { InstancePage } from "./InstancePage";
import { InstancesPage } from "./InstancesPage";

// Pages of this area, under /p/:project/.
export const routes: RouteObject[] = [
  { path: "instances", element: <InstancesPage /> },
  { path: "instances/:id", element: <InstancePage /> },
  { path: "instances/:id/edit", element: <EditInstancePage /> },
];
