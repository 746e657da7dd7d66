import type { RouteObject } from "react-router-dom";

import { LaunchServicePage } from "./LaunchServicePage";
import { ServiceDetailPage } from "./ServiceDetailPage";
import { ServicesPage } from "./ServicesPage";

// Pages of this area, under /p/:project/.
export const routes: RouteObject[] = [
  { path: "services", element: <ServicesPage /> },
  { path: "services/new", element: <LaunchServicePage /> },
  { path: "services/:id", element: <ServiceDetailPage /> },
];
