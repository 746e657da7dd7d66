"""The hooks by which lower domains ask higher ones (core/hooks.py), bound in one place, where
every domain is known. Bound when the schema is built (api/schema.py); `bind()` is idempotent."""

from __future__ import annotations

from gpupaas.accounts import service as accounts
from gpupaas.audit import service as audit
from gpupaas.catalog.service import profiles as catalog
from gpupaas.clusters import service as clusters
from gpupaas.compute import graphql as compute_graphql
from gpupaas.compute import service as compute
from gpupaas.instance_templates import service as templates
from gpupaas.metering import meter
from gpupaas.pull_secrets import service as pull_secrets
from gpupaas.quotas import service as quotas
from gpupaas.service_instances import graphql as services_graphql
from gpupaas.service_instances import service as services
from gpupaas.service_instances import ssh as service_ssh
from gpupaas.ssh_keys import service as ssh_keys


def bind() -> None:
    # A compute instance with service instances in it is not destroyed or deleted, and
    # ComputeInstance.services lists them.
    compute.SERVICES_IN.bind(services.names_in)
    compute.MOVE_SERVICES.bind(services.move_with)
    compute_graphql.SERVICES_OF.bind(services_graphql.services_of)
    # A cluster that profiles deploy to, or instances are deployed on, is not deleted.
    # A pull secret that templates or service instances name is not deleted.
    pull_secrets.SECRET_USERS.bind((templates.in_use, services.pull_secret_users))
    clusters.CLUSTER_USERS.bind((catalog.profiles_on, compute.instances_on))
    # A cluster's check reports the GPU models of the profiles deploying to it that no node has.
    clusters.GPU_MODELS_ON.bind(catalog.gpu_models_on)
    # A deploy of a compute instance must fit its project's quota and its owner's.
    compute.QUOTA_CHECK.bind(quotas.check_deploy)
    # ...and a refusal is told to the project's webhooks (QUOTA_REACHED).
    compute.QUOTA_REFUSED.bind(quotas.report_refusal)
    # A project that holds compute or service instances is not deleted; Project.instanceCount.
    accounts.INSTANCE_COUNTERS.bind((compute.counts_by_project, services.counts_by_project))
    # A deleted user's instances are charged to no owner from then on.
    accounts.OWNER_GONE.bind(meter.release_owner)
    # A user's new or deleted SSH key reaches the running services they own.
    ssh_keys.KEYS_CHANGED.bind(service_ssh.keys_changed_for)
    # The audit log finds the project a filter or a refused request names.
    audit.PROJECT_NAMED.bind(accounts.project_named)
