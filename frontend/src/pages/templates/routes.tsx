import type { RouteObject } from "react-router-dom";

import { AdminOnly } from "../../app/Layout";
import { AddVersionPage } from "./AddVersionPage";
import { TemplatePage } from "./TemplatePage";
import { TemplatesListPage } from "./TemplatesListPage";

// Studio > Environment Templates, under /p/:project/ (project admins only).
export const routes: RouteObject[] = [
  {
    path: "studio/templates",
    element: (
      <AdminOnly>
        <TemplatesListPage />
      </AdminOnly>
    ),
  },
  {
    path: "studio/templates/:id",
    element: (
      <AdminOnly>
        <TemplatePage />
      </AdminOnly>
    ),
  },
  {
    path: "studio/templates/:id/versions/new",
    element: (
      <AdminOnly>
        <AddVersionPage />
      </AdminOnly>
    ),
  },
];
