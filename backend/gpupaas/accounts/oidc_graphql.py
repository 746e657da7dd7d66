"""GraphQL for the sign-in page: which ways to sign in this installation offers (public)."""

from __future__ import annotations

import strawberry

from gpupaas.graphql.context import Info

# api/oidc.py serves it: it takes the path from here (accounts cannot import the API layer).
OIDC_LOGIN_PATH = "/auth/oidc/login"


@strawberry.type(name="OidcSignIn")
class OidcSignInType:
    name: str = strawberry.field(description='The provider\'s name, as in "Sign in with <name>".')
    login_url: str = strawberry.field(
        description="Where the browser goes to sign in there; add ?next=<a path of this site> to come "
        "back to it."
    )


@strawberry.type(name="SignInOptions")
class SignInOptionsType:
    oidc: OidcSignInType | None = strawberry.field(
        description="OpenID Connect sign-in, or null when it is not configured."
    )


@strawberry.type
class SignInQuery:
    @strawberry.field(description="How one may sign in here; anyone may ask, signed in or not.")
    def sign_in_options(self, info: Info) -> SignInOptionsType:
        oidc = info.context.settings.oidc
        return SignInOptionsType(
            oidc=OidcSignInType(name=oidc.name, login_url=OIDC_LOGIN_PATH) if oidc is not None else None
        )
