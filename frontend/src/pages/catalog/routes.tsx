import type { RouteObject } from "react-router-dom";

import { CatalogPage } from "./CatalogPage";
import { LaunchPage } from "./LaunchPage";
import { SkuPage } from "./SkuPage";

// Pages of this area, under /p/:project/.
export const routes: RouteObject[] = [
  { path: "catalog", element: <CatalogPage /> },
  { path: "catalog/:profileId", element: <SkuPage /> },
  { path: "catalog/:profileId/launch", element: <LaunchPage /> },
];
