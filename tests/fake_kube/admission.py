"""What happens to an object between the request and storage: API defaulting, the LimitRanger
and ResourceQuota admission plugins, and the initial status of new objects.

Defaulting covers the fields code commonly reads back (pod spec defaults, Deployment strategy,
Service type/ports/protocol, PVC volumeMode, Secret stringData -> data, the namespace name label);
it is not the complete set the real API server fills in.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from decimal import Decimal

from tests.fake_kube import registry_batch, registry_storage
from tests.fake_kube.util import Obj, format_quantity, get_path, parse_quantity

COMPUTE = ("cpu", "memory", "ephemeral-storage")


class AdmissionDenied(Exception):
    """A 403 Forbidden from an admission plugin, with the reason text after "is forbidden: "."""


# Defaulting --------------------------------------------------------------------------------


def _default_container(container: Obj) -> None:
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    image = str(container.get("image", ""))
    tag = image.rsplit("/", 1)[-1]
    if "imagePullPolicy" not in container:
        latest = "@" not in tag and (":" not in tag or tag.endswith(":latest"))
        container["imagePullPolicy"] = "Always" if latest else "IfNotPresent"
    for port in container.get("ports") or []:
        port.setdefault("protocol", "TCP")
    resources = container.get("resources")
    if isinstance(resources, dict) and resources.get("limits"):
        requests = resources.setdefault("requests", {})
        for name, value in resources["limits"].items():
            requests.setdefault(name, value)
    if "resources" not in container:
        container["resources"] = {}


def default_pod_spec(spec: Obj) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for field in ("containers", "initContainers"):
        for container in spec.get(field) or []:
            if isinstance(container, dict):
                _default_container(container)


def _default_template(spec: Obj) -> None:
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        default_pod_spec(template["spec"])


def apply_defaults(kind: str, obj: Obj) -> None:
    """Fills in the defaults of the API (in place)."""
    spec = obj.get("spec")
    metadata = obj.setdefault("metadata", {})
    if kind == "Namespace":
        metadata.setdefault("labels", {})["kubernetes.io/metadata.name"] = metadata.get("name", "")
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    elif kind == "Pod" and isinstance(spec, dict):
        default_pod_spec(spec)
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
        spec.setdefault("priority", 0)
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    elif kind == "Deployment" and isinstance(spec, dict):
        spec.setdefault("replicas", 1)
        strategy = spec.setdefault("strategy", {})
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            rolling.setdefault("maxUnavailable", "25%")
            rolling.setdefault("maxSurge", "25%")
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        _default_template(spec)
    elif kind == "StatefulSet" and isinstance(spec, dict):
        spec.setdefault("replicas", 1)
        spec.setdefault("podManagementPolicy", "OrderedReady")
        update = spec.setdefault("updateStrategy", {})
        update.setdefault("type", "RollingUpdate")
        if update["type"] == "RollingUpdate":
            update.setdefault("rollingUpdate", {}).setdefault("partition", 0)
        spec.setdefault("revisionHistoryLimit", 10)
        policy = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
        policy.setdefault("whenDeleted", "Retain")
        policy.setdefault("whenScaled", "Retain")
        for claim in spec.get("volumeClaimTemplates") or []:
            claim.setdefault("apiVersion", "v1")
            claim.setdefault("kind", "PersistentVolumeClaim")
            claim_spec = claim.setdefault("spec", {})
            claim_spec.setdefault("volumeMode", "Filesystem")
            claim.setdefault("status", {"phase": "Pending"})
        _default_template(spec)
    elif kind == "ReplicaSet" and isinstance(spec, dict):
        spec.setdefault("replicas", 1)
        _default_template(spec)
    elif kind == "Service" and isinstance(spec, dict):
        service_type = spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        for port in spec.get("ports") or []:
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
        if service_type != "ExternalName":
            spec.setdefault("internalTrafficPolicy", "Cluster")
            spec.setdefault("ipFamilies", ["IPv4"])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
        if service_type in ("NodePort", "LoadBalancer"):
            spec.setdefault("externalTrafficPolicy", "Cluster")
        if service_type == "LoadBalancer":
            spec.setdefault("allocateLoadBalancerNodePorts", True)
    elif kind == "PersistentVolumeClaim" and isinstance(spec, dict):
        spec.setdefault("volumeMode", "Filesystem")
    elif kind == "Job" and isinstance(spec, dict):
        registry_batch.default_job(obj)
        _default_template(spec)
    elif kind == "CronJob" and isinstance(spec, dict):
        registry_batch.default_cron_job(obj)
        job_spec = get_path(spec, "jobTemplate", "spec")
        if isinstance(job_spec, dict):
            _default_template(job_spec)
    elif kind == "DaemonSet" and isinstance(spec, dict):
        update = spec.setdefault("updateStrategy", {})
        update.setdefault("type", "RollingUpdate")
        if update["type"] == "RollingUpdate":
            update.setdefault("rollingUpdate", {}).setdefault("maxUnavailable", 1)
            update["rollingUpdate"].setdefault("maxSurge", 0)
        spec.setdefault("revisionHistoryLimit", 10)
        _default_template(spec)
    elif kind == "StorageClass":
        registry_storage.default_storage_class(obj)
    elif kind == "PersistentVolume":
        registry_storage.default_persistent_volume(obj)
    elif kind == "Secret":
        obj.setdefault("type", "Opaque")
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict):
            data = obj.setdefault("data", {})
            for key, value in string_data.items():
                data[key] = base64.b64encode(str(value).encode()).decode()
    elif kind == "NetworkPolicy" and isinstance(spec, dict) and "policyTypes" not in spec:
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]


def initial_status(kind: str, obj: Obj) -> Obj | None:
    """The status a new object starts with (the status of a create request is ignored)."""
    if kind == "Namespace":
        return {"phase": "Active"}
    if kind == "Pod":
        return {"phase": "Pending", "qosClass": qos_class(obj.get("spec") or {})}
    if kind == "Service":
        return {"loadBalancer": {}}
    if kind == "PersistentVolumeClaim":
        return {"phase": "Pending"}
    if kind in ("StatefulSet", "ReplicaSet"):
        return {"replicas": 0}
    if kind in ("Deployment", "ResourceQuota", "Job", "CronJob"):
        return {}
    if kind == "DaemonSet":
        return {
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0,
        }
    if kind == "PersistentVolume":
        return {"phase": "Pending"}
    return None


def qos_class(spec: Obj) -> str:
    containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        if any(name in requests or name in limits for name in ("cpu", "memory")):
            any_set = True
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


# LimitRanger -------------------------------------------------------------------------------


def limit_ranger(pod: Obj, limit_ranges: Iterable[Obj]) -> None:
    """Container defaults and min/max from the namespace's LimitRanges (in place); raises
    AdmissionDenied when a container is outside a min or max."""
    set_requests: dict[str, list[str]] = {}
    set_limits: dict[str, list[str]] = {}
    for limit_range in limit_ranges:
        for item in get_path(limit_range, "spec", "limits") or []:
            if item.get("type") != "Container":
                continue
            for container in (pod.get("spec") or {}).get("containers") or []:
                resources = container.setdefault("resources", {})
                for name, value in (item.get("default") or {}).items():
                    limits = resources.setdefault("limits", {})
                    if name not in limits:
                        limits[name] = value
                        set_limits.setdefault(container["name"], []).append(name)
                for name, value in {
                    **(item.get("default") or {}),
                    **(item.get("defaultRequest") or {}),
                }.items():
                    requests = resources.setdefault("requests", {})
                    if name not in requests:
                        requests[name] = value
                        set_requests.setdefault(container["name"], []).append(name)
                _check_min_max(container, item)
    notes = [f"{', '.join(names)} request for container {name}" for name, names in set_requests.items()]
    notes += [f"{', '.join(names)} limit for container {name}" for name, names in set_limits.items()]
    if notes:
        pod.setdefault("metadata", {}).setdefault("annotations", {})["kubernetes.io/limit-ranger"] = (
            "LimitRanger plugin set: " + "; ".join(notes)
        )


def _check_min_max(container: Obj, item: Obj) -> None:
    resources = container.get("resources") or {}
    for name, maximum in (item.get("max") or {}).items():
        limit = (resources.get("limits") or {}).get(name)
        if limit is None:
            raise AdmissionDenied(f"maximum {name} usage per Container is {maximum}.  No limit is specified")
        if parse_quantity(limit) > parse_quantity(maximum):
            raise AdmissionDenied(f"maximum {name} usage per Container is {maximum}, but limit is {limit}")
    for name, minimum in (item.get("min") or {}).items():
        request = (resources.get("requests") or {}).get(name)
        if request is None:
            raise AdmissionDenied(
                f"minimum {name} usage per Container is {minimum}.  No request is specified"
            )
        if parse_quantity(request) < parse_quantity(minimum):
            raise AdmissionDenied(
                f"minimum {name} usage per Container is {minimum}, but request is {request}"
            )


# Resource usage and ResourceQuota ------------------------------------------------------------


def pod_resources(spec: Obj, part: str) -> dict[str, Decimal]:
    """The pod's effective requests (or limits): the sum over containers, at least the largest
    init container."""
    total: dict[str, Decimal] = {}
    for container in spec.get("containers") or []:
        for name, value in ((container.get("resources") or {}).get(part) or {}).items():
            total[name] = total.get(name, Decimal(0)) + parse_quantity(value)
    for container in spec.get("initContainers") or []:
        for name, value in ((container.get("resources") or {}).get(part) or {}).items():
            total[name] = max(total.get(name, Decimal(0)), parse_quantity(value))
    return total


def is_terminal(pod: Obj) -> bool:
    return get_path(pod, "status", "phase") in ("Failed", "Succeeded")


def usage(kind: str, plural: str, group: str, obj: Obj) -> dict[str, Decimal]:
    """What one object counts against a ResourceQuota."""
    count_key = f"count/{plural}.{group}" if group else f"count/{plural}"
    result: dict[str, Decimal] = {count_key: Decimal(1)}
    if kind in ("ConfigMap", "Secret", "Service", "PersistentVolumeClaim", "ResourceQuota"):
        result[plural] = Decimal(1)
    if kind == "Pod":
        if is_terminal(obj):
            return {}
        spec = obj.get("spec") or {}
        result["pods"] = Decimal(1)
        for name, value in pod_resources(spec, "requests").items():
            result[f"requests.{name}"] = value
            if name in COMPUTE:
                result[name] = value
        for name, value in pod_resources(spec, "limits").items():
            if name in COMPUTE:
                result[f"limits.{name}"] = value
    elif kind == "PersistentVolumeClaim":
        storage = get_path(obj, "spec", "resources", "requests", "storage")
        if storage is not None:
            result["requests.storage"] = parse_quantity(storage)
            storage_class = get_path(obj, "spec", "storageClassName")
            if storage_class:
                result[f"{storage_class}.storageclass.storage.k8s.io/requests.storage"] = parse_quantity(
                    storage
                )
                result[f"{storage_class}.storageclass.storage.k8s.io/persistentvolumeclaims"] = Decimal(1)
    elif kind == "Service":
        service_type = get_path(obj, "spec", "type")
        if service_type in ("NodePort", "LoadBalancer"):
            result["services.nodeports"] = Decimal(len(get_path(obj, "spec", "ports") or []))
        if service_type == "LoadBalancer":
            result["services.loadbalancers"] = Decimal(1)
    return result


def _pretty(values: dict[str, Decimal]) -> str:
    return ",".join(f"{name}={format_quantity(values[name], name)}" for name in sorted(values))


def check_quota(
    quota: Obj,
    kind: str,
    name: str,
    delta: dict[str, Decimal],
    used: dict[str, Decimal],
    pod_spec: Obj | None,
) -> None:
    """Raises AdmissionDenied when the object would take the namespace over a quota."""
    hard = {key: parse_quantity(value) for key, value in (get_path(quota, "spec", "hard") or {}).items()}
    quota_name = get_path(quota, "metadata", "name")
    if pod_spec is not None:
        missing: list[str] = []
        for key in sorted(hard):
            part, _, resource = (
                key.partition(".") if key.startswith(("requests.", "limits.")) else ("requests", "", key)
            )
            if resource not in ("cpu", "memory"):
                continue
            unset = [
                c.get("name", "")
                for c in pod_spec.get("containers") or []
                if resource not in ((c.get("resources") or {}).get(part) or {})
            ]
            if unset:
                missing.append(f"{part}.{resource} for: {','.join(unset)}")
        if missing:
            raise AdmissionDenied(f"failed quota: {quota_name}: must specify {'; '.join(missing)}")
    over = [
        key
        for key, amount in delta.items()
        if key in hard and amount > 0 and used.get(key, Decimal(0)) + amount > hard[key]
    ]
    if over:
        requested = {key: delta[key] for key in over}
        used_now = {key: used.get(key, Decimal(0)) for key in over}
        limited = {key: hard[key] for key in over}
        raise AdmissionDenied(
            f"exceeded quota: {quota_name}, requested: {_pretty(requested)}, used: {_pretty(used_now)}, "
            f"limited: {_pretty(limited)}"
        )


def quota_status(quota: Obj, used: dict[str, Decimal]) -> Obj:
    hard = get_path(quota, "spec", "hard") or {}
    return {
        "hard": dict(hard),
        "used": {key: format_quantity(used.get(key, Decimal(0)), key) for key in hard},
    }
