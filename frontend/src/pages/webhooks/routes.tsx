import type { RouteObject } from "react-router-dom";

import { AdminOnly } from "../../app/Layout";
import { WebhookPage } from "./WebhookPage";
import { WebhooksPage } from "./WebhooksPage";

// Pages of this area, under /p/:project/ (studio: the project's admins).
export const routes: RouteObject[] = [
  { path: "studio/webhooks", element: <AdminOnly><WebhooksPage /></AdminOnly> },
  { path: "studio/webhooks/:id", element: <AdminOnly><WebhookPage /></AdminOnly> },
];
