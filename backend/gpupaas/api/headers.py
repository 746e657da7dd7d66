"""The security headers of every HTTP response (README, "Security").

The studio runs under a strict Content-Security-Policy: scripts only from this origin (the built
SPA has no inline script), no plugins, no <base> or form posts elsewhere, and no framing by any
site (frame-ancestors 'none', and X-Frame-Options for older browsers). Styles may be inline (the
component library sets style attributes); images may come from any web address (catalog icons
and readme images are URLs that admins enter; the readme's markdown is sanitised) and data: URIs.
Every response also says nosniff and no-referrer: a Connect link carries its service's token in
the query string, which a Referer header would otherwise hand to the next site. With secure
cookies on (the app is served over https), HSTS tells browsers to use https only.

GraphiQL (GET /graphql from a browser, when GPUPAAS_GRAPHIQL is on) is strawberry's page: an inline
script and its libraries from unpkg.com. Its page gets a policy that allows exactly those, and is
still unframeable.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["GRAPHIQL_CSP", "STUDIO_CSP", "SecurityHeaders"]

STUDIO_CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: https: http:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)

GRAPHIQL_CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self' 'unsafe-inline' https://unpkg.com",
        "style-src 'self' 'unsafe-inline' https://unpkg.com",
        "img-src 'self' data: https: http:",
        "font-src 'self' data: https://unpkg.com",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)

HSTS = "max-age=31536000; includeSubDomains"


class SecurityHeaders:
    """Adds the headers above to every HTTP response (an ASGI middleware)."""

    def __init__(self, app: ASGIApp, *, hsts: bool = False, graphql_path: str = "/graphql") -> None:
        self.app = app
        self.hsts = hsts
        self.graphql_path = graphql_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                graphiql = scope["path"] == self.graphql_path and headers.get("content-type", "").startswith(
                    "text/html"
                )
                headers["Content-Security-Policy"] = GRAPHIQL_CSP if graphiql else STUDIO_CSP
                headers["X-Frame-Options"] = "DENY"
                headers["X-Content-Type-Options"] = "nosniff"
                headers["Referrer-Policy"] = "no-referrer"
                if self.hsts:
                    headers["Strict-Transport-Security"] = HSTS
            await send(message)

        await self.app(scope, receive, with_headers)
