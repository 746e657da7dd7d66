import { Navigate, RouterProvider, createBrowserRouter, type RouteObject } from "react-router-dom";

import { Loading } from "../components/states";
import { LoginPage } from "../pages/Login";
import { routes as catalogRoutes } from "../pages/catalog/routes";
import { routes as clusterRoutes } from "../pages/clusters/routes";
import { routes as dashboardRoutes } from "../pages/dashboard/routes";
import { routes as instanceTemplateRoutes } from "../pages/instance-templates/routes";
import { routes as instanceRoutes } from "../pages/instances/routes";
import { routes as profileRoutes } from "../pages/profiles/routes";
import { routes as scheduleRoutes } from "../pages/schedules/routes";
import { routes as serviceRoutes } from "../pages/services/routes";
import { routes as templateRoutes } from "../pages/templates/routes";
import { routes as usageRoutes } from "../pages/usage/routes";
import { routes as webhookRoutes } from "../pages/webhooks/routes";
import { routes as pullSecretRoutes } from "../pages/pull-secrets/routes";
import { routes as auditRoutes } from "../pages/audit/routes";
import { routes as peopleRoutes } from "../pages/people/routes";
import { AuthProvider, useAuth } from "./auth";
import { Layout } from "./Layout";
import { NotFound } from "./NotFound";
import { lastProject } from "./project";

/** "/": the last project used (or the first one) once signed in, else the sign-in page. */
function Home() {
  const { me, projects, fetching } = useAuth();
  if (fetching) return <Loading label="Signing in" />;
  if (!me) return <Navigate to="/login" replace />;
  const remembered = lastProject();
  const project = projects.find((p) => p.name === remembered) ?? projects.find((p) => p.name !== "gpupaas-system") ?? projects[0];
  if (!project) return <Loading label="No project yet: ask a platform admin to add you to one" />;
  return <Navigate to={`/p/${project.name}/dashboard`} replace />;
}

export const appRoutes: RouteObject[] = [
  { path: "/", element: <Home /> },
  { path: "/login", element: <LoginPage /> },
  {
    path: "/p/:project",
    element: <Layout />,
    children: [
      { index: true, element: <Navigate to="dashboard" replace /> },
      ...dashboardRoutes,
      ...catalogRoutes,
      ...instanceRoutes,
      ...serviceRoutes,
      ...profileRoutes,
      ...templateRoutes,
      ...instanceTemplateRoutes,
      ...clusterRoutes,
      ...usageRoutes,
      ...webhookRoutes,
      ...pullSecretRoutes,
      ...scheduleRoutes,
      ...auditRoutes,
      ...peopleRoutes,
      { path: "*", element: <NotFound /> },
    ],
  },
  { path: "*", element: <Navigate to="/" replace /> },
];

const router = createBrowserRouter(appRoutes);

export function App() {
  return (
    <AuthProvider>
      <RouterProvider router={router} />
    </AuthProvider>
  );
}
