import type { RouteObject } from "react-router-dom";

import { AdminOnly } from "../../app/Layout";
import { InstanceTemplateEditPage, InstanceTemplateNewPage } from "./InstanceTemplateFormPage";
import { InstanceTemplatesPage } from "./InstanceTemplatesPage";

// Pages of this area, under /p/:project/.
export const routes: RouteObject[] = [
  {
    path: "studio/instance-templates",
    element: (
      <AdminOnly>
        <InstanceTemplatesPage />
      </AdminOnly>
    ),
  },
  {
    path: "studio/instance-templates/new",
    element: (
      <AdminOnly>
        <InstanceTemplateNewPage />
      </AdminOnly>
    ),
  },
  {
    path: "studio/instance-templates/:id/edit",
    element: (
      <AdminOnly>
        <InstanceTemplateEditPage />
      </AdminOnly>
    ),
  },
];
