"""The schema: root types merged from the domains' pieces, with limits and the error policy."""

from __future__ import annotations

import strawberry
from strawberry.extensions import (
    AddValidationRules,
    DisableIntrospection,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    SchemaExtension,
    ValidationCache,
)
from strawberry.extensions.runner import SchemaExtensionsRunner
from strawberry.schema.config import StrawberryConfig
from strawberry.tools import merge_types
from strawberry.types import ExecutionContext
from strawberry.types.base import get_object_definition

from gpupaas.accounts.graphql import AccountsMutation, AccountsQuery
from gpupaas.accounts.oidc_graphql import SignInQuery
from gpupaas.api import wiring
from gpupaas.audit.graphql import AuditedMutation, AuditQuery
from gpupaas.catalog.graphql import CatalogMutation, CatalogQuery
from gpupaas.clusters.graphql import ClustersMutation, ClustersQuery
from gpupaas.compute.events_graphql import ComputeEventsQuery, ComputeEventsSubscription
from gpupaas.compute.graphql import ComputeMutation, ComputeQuery, ComputeSubscription
from gpupaas.graphql.executor import ExecutionContext as LeakFreeExecutionContext
from gpupaas.graphql.extensions import ErrorPolicy, ExtensionsRunner, Logged, Measured, TextGuard
from gpupaas.graphql.response_cache import BumpDataVersion
from gpupaas.instance_templates.graphql import GpuServiceMutation, GpuServiceQuery
from gpupaas.metering.graphql import UsageMutation, UsageQuery
from gpupaas.pull_secrets.graphql import PullSecretsMutation, PullSecretsQuery
from gpupaas.quotas.graphql import QuotasMutation, QuotasQuery
from gpupaas.schedules.graphql import SchedulesMutation, SchedulesQuery
from gpupaas.service_instances.graphql import (
    ServiceInstanceMutation,
    ServiceInstanceQuery,
    ServiceInstanceSubscription,
)
from gpupaas.service_instances.logs_graphql import ServiceLogsQuery, ServiceLogsSubscription
from gpupaas.service_instances.ssh_graphql import ServiceInstanceSshMutation
from gpupaas.settings import Settings
from gpupaas.ssh_keys.graphql import SshKeysMutation, SshKeysQuery
from gpupaas.webhooks.graphql import WebhooksMutation, WebhooksQuery
from graphql import GraphQLError

wiring.bind()

Query = merge_types(
    "Query",
    (
        AccountsQuery,
        SignInQuery,
        CatalogQuery,
        ComputeQuery,
        ClustersQuery,
        GpuServiceQuery,
        ServiceInstanceQuery,
        QuotasQuery,
        UsageQuery,
        WebhooksQuery,
        PullSecretsQuery,
        SchedulesQuery,
        AuditQuery,
        SshKeysQuery,
        ComputeEventsQuery,
        ServiceLogsQuery,
    ),
)
Mutation = merge_types(
    "Mutation",
    (
        AccountsMutation,
        CatalogMutation,
        ComputeMutation,
        ClustersMutation,
        GpuServiceMutation,
        ServiceInstanceMutation,
        QuotasMutation,
        UsageMutation,
        WebhooksMutation,
        PullSecretsMutation,
        SchedulesMutation,
        SshKeysMutation,
        ServiceInstanceSshMutation,
    ),
)
Subscription = merge_types(
    "Subscription",
    (ComputeSubscription, ServiceInstanceSubscription, ComputeEventsSubscription, ServiceLogsSubscription),
)

# Every mutation runs in an audit scope, whoever wrote it (audit/graphql.py): the services record
# their changes in it, and refusals are recorded here.
for _mutation in get_object_definition(Mutation, strict=True).fields:
    _mutation.extensions.append(AuditedMutation())


class Schema(strawberry.Schema):
    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        """Not logged here: ErrorPolicy logs what is unexpected; the rest is the caller's mistake."""

    def create_extensions_runner(
        self, execution_context: ExecutionContext, extensions: list[SchemaExtension]
    ) -> SchemaExtensionsRunner:
        """Ours finds each hook's extensions once per operation, not once per subscription event."""
        return ExtensionsRunner(execution_context=execution_context, extensions=extensions)


def build_schema(settings: Settings | None = None) -> strawberry.Schema:
    extensions: list[object] = [Logged, Measured, ErrorPolicy, BumpDataVersion]
    if settings is not None:
        # Factories, not instances: strawberry builds fresh extensions per request (the caches
        # themselves are module-level and shared).
        depth, aliases, tokens = settings.max_query_depth, settings.max_aliases, settings.max_tokens
        # The limiters' rule classes are built once: ValidationCache keys on them, so limiters
        # rebuilt per request (new classes each time) would make every validation a miss.
        limits = [
            *QueryDepthLimiter(max_depth=depth).validation_rules,
            *MaxAliasesLimiter(max_alias_count=aliases).validation_rules,
        ]
        extensions += [
            lambda: AddValidationRules(limits),
            lambda: MaxTokensLimiter(max_token_count=tokens),
            lambda: ParserCache(maxsize=512),
            lambda: ValidationCache(maxsize=512),
            TextGuard,
        ]
        if not settings.introspection:
            extensions.append(DisableIntrospection)
    return Schema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        extensions=extensions,  # type: ignore[arg-type]
        config=StrawberryConfig(auto_camel_case=True),
        execution_context_class=LeakFreeExecutionContext,
    )


def schema_sdl() -> str:
    return build_schema().as_str() + "\n"
