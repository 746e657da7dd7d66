import type { ReactNode } from "react";
import type { RouteObject } from "react-router-dom";

import { AdminOnly } from "../../app/Layout";
import { ClusterDetailPage } from "./ClusterDetailPage";
import { ClusterEditPage, ClusterNewPage } from "./ClusterFormPage";
import { ClustersPage } from "./ClustersPage";
import { PlatformAdminOnly } from "./common";

function Guard({ children }: { children: ReactNode }) {
  return (
    <AdminOnly>
      <PlatformAdminOnly>{children}</PlatformAdminOnly>
    </AdminOnly>
  );
}

// Pages of this area, under /p/:project/ (studio: platform admins only).
export const routes: RouteObject[] = [
  { path: "studio/clusters", element: <Guard><ClustersPage /></Guard> },
  { path: "studio/clusters/new", element: <Guard><ClusterNewPage /></Guard> },
  { path: "studio/clusters/:id", element: <Guard><ClusterDetailPage /></Guard> },
  { path: "studio/clusters/:id/edit", element: <Guard><ClusterEditPage /></Guard> },
];
