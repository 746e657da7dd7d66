"""Serving the studio (the SPA that `npm run build` writes into gpupaas/static/).

- Hashed assets (/assets/<name>-<hash>.js) are cached forever: a new build has new names.
- index.html, and the few unhashed files (favicon), are revalidated on every use (no-cache), so a
  new build reaches browsers at their next page load.
- Any other path that looks like a page of the app (no file extension, not under a reserved
  prefix) gets index.html: the history fallback that lets /p/ml/instances/42 be reloaded or
  bookmarked. Never for the API and operations endpoints (/graphql, /healthz, /readyz, /metrics)
  nor for a missing asset: those are 404, so a broken link or an old chunk fails loudly instead of
  answering HTML with status 200.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.staticfiles import StaticFiles

IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
RESERVED = frozenset({"graphql", "healthz", "readyz", "metrics", "assets", "api"})


def is_app_route(path: str) -> bool:
    """Whether `path` (relative, without the leading "/") is a page of the SPA."""
    parts = PurePosixPath(path).parts
    if not parts:
        return True
    return parts[0] not in RESERVED and "." not in parts[-1]


class SpaFiles(StaticFiles):
    def __init__(self, directory: Any) -> None:
        super().__init__(directory=directory, html=True)

    async def get_response(self, path: str, scope: Any) -> Response:
        try:
            response = await super().get_response(path, scope)
        except HTTPException as error:
            if error.status_code != 404 or not is_app_route(path if path != "." else ""):
                raise
            response = await super().get_response("index.html", scope)
        hashed = path.startswith("assets/") and response.status_code in (200, 304)
        response.headers["Cache-Control"] = IMMUTABLE if hashed else REVALIDATE
        return response
