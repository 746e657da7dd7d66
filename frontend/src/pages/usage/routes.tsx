import type { RouteObject } from "react-router-dom";

import { UsagePage } from "./UsagePage";

// Pages of this area, under /p/:project/ (everyone signed in: each sees the usage they may).
export const routes: RouteObject[] = [{ path: "usage", element: <UsagePage /> }];
