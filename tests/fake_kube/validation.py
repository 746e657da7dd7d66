"""What the API server rejects beyond the schema: names, labels, quantities, pod specs,
selectors that must match templates, and fields that are immutable after creation.

Messages follow the real validation messages (apimachinery's validation package) closely
enough that code matching on "field is immutable" or "Required value" works; the exact wording
of the rarer checks is approximated.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from tests.fake_kube import registry_batch, selectors
from tests.fake_kube.resources import ResourceType
from tests.fake_kube.schema import Cause, schema_causes
from tests.fake_kube.util import Obj, get_path, parse_quantity

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_IANA_SVC_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")

DNS_LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS_1035_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
DNS_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_VALUE_MESSAGE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
QUALIFIED_NAME_MESSAGE = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
QUANTITY_MESSAGE = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)

# Kinds whose names need only be valid path segments.
_PATH_SEGMENT_KINDS = ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
_NATIVE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "storage", "pods")


def _q(value: Any) -> str:
    if isinstance(value, str | dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _invalid(field: str, value: Any, why: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {_q(value)}: {why}", field)


def _required(field: str) -> Cause:
    return Cause("FieldValueRequired", "Required value", field)


def _forbidden(field: str, why: str) -> Cause:
    return Cause("FieldValueForbidden", f"Forbidden: {why}", field)


def _immutable(field: str, value: Any) -> Cause:
    shown = json.dumps(value, separators=(",", ":")) if isinstance(value, dict | list) else value
    return _invalid(field, shown, "field is immutable")


def name_problem(kind: str, name: str) -> str | None:
    if kind == "Namespace":
        return None if len(name) <= 63 and DNS_LABEL.match(name) else DNS_LABEL_MESSAGE
    if kind == "Service":
        return None if len(name) <= 63 and DNS_1035_LABEL.match(name) else DNS_1035_MESSAGE
    if kind in _PATH_SEGMENT_KINDS:
        if name in (".", "..") or "/" in name or "%" in name:
            return f"may not be '{name}'" if name in (".", "..") else "may not contain '/' or '%'"
        return None
    if len(name) > 253 or not DNS_SUBDOMAIN.match(name):
        return DNS_SUBDOMAIN_MESSAGE
    return None


def qualified_name_problem(key: str) -> str | None:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix)):
        return "prefix part " + DNS_SUBDOMAIN_MESSAGE
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        return QUALIFIED_NAME_MESSAGE
    return None


def _labels(field: str, labels: Any) -> list[Cause]:
    causes: list[Cause] = []
    if not isinstance(labels, Mapping):
        return causes
    for key, value in labels.items():
        if problem := qualified_name_problem(str(key)):
            causes.append(_invalid(field, key, problem))
        if isinstance(value, str) and (len(value) > 63 or not _LABEL_VALUE.match(value)):
            causes.append(_invalid(field, value, LABEL_VALUE_MESSAGE))
    return causes


def _quantity(field: str, value: Any) -> tuple[Decimal | None, list[Cause]]:
    try:
        quantity = parse_quantity(value)
    except (ValueError, TypeError, ArithmeticError):
        return None, [_invalid(field, value, QUANTITY_MESSAGE)]
    if quantity < 0:
        return quantity, [_invalid(field, value, "must be greater than or equal to 0")]
    return quantity, []


def _metadata(rt: ResourceType, obj: Obj) -> list[Cause]:
    metadata = obj.get("metadata") or {}
    causes: list[Cause] = []
    name = metadata.get("name")
    if not name:
        causes.append(
            Cause("FieldValueRequired", "Required value: name or generateName is required", "metadata.name")
        )
    elif problem := name_problem(rt.kind, str(name)):
        causes.append(_invalid("metadata.name", name, problem))
    causes += _labels("metadata.labels", metadata.get("labels"))
    for key in metadata.get("annotations") or {}:
        if problem := qualified_name_problem(str(key)):
            causes.append(_invalid("metadata.annotations", key, problem))
    size = sum(len(k) + len(str(v)) for k, v in (metadata.get("annotations") or {}).items())
    if size > 256 * 1024:
        causes.append(
            Cause("FieldValueTooLong", "Too long: must have at most 262144 bytes", "metadata.annotations")
        )
    for i, finalizer in enumerate(metadata.get("finalizers") or []):
        if (
            isinstance(finalizer, str)
            and "/" not in finalizer
            and finalizer
            not in (
                "kubernetes",
                "foregroundDeletion",
                "orphan",
            )
        ):
            causes.append(
                _invalid(
                    f"metadata.finalizers[{i}]",
                    finalizer,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )
    for i, ref in enumerate(metadata.get("ownerReferences") or []):
        for key in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(key):
                causes.append(
                    _invalid(
                        f"metadata.ownerReferences[{i}].{key}", ref.get(key, ""), f"{key} must not be empty"
                    )
                )
    return causes


def _resources(field: str, resources: Any) -> list[Cause]:
    causes: list[Cause] = []
    if not isinstance(resources, Mapping):
        return causes
    parsed: dict[str, dict[str, Decimal]] = {"limits": {}, "requests": {}}
    for part in ("limits", "requests"):
        for name, value in (resources.get(part) or {}).items():
            quantity, problems = _quantity(f"{field}.{part}[{name}]", value)
            causes += problems
            if quantity is None:
                continue
            parsed[part][name] = quantity
            extended = name not in _NATIVE_RESOURCES and not name.startswith("hugepages-")
            if extended and quantity != quantity.to_integral_value():
                causes.append(_invalid(f"{field}.{part}[{name}]", value, "must be an integer"))
    for name, request in parsed["requests"].items():
        limit = parsed["limits"].get(name)
        extended = name not in _NATIVE_RESOURCES and not name.startswith("hugepages-")
        if limit is not None and request > limit:
            causes.append(
                _invalid(
                    f"{field}.requests",
                    str(resources["requests"][name]),
                    f"must be less than or equal to {name} limit of {resources['limits'][name]}",
                )
            )
        if extended and "/" in name:
            if limit is None:
                causes.append(
                    _forbidden(f"{field}.limits", "Limit must be set for non overcommitable resources")
                )
            elif limit != request:
                causes.append(
                    _invalid(
                        f"{field}.requests[{name}]",
                        str(resources["requests"][name]),
                        "must be equal to " + f"{name} limit of {resources['limits'][name]}",
                    )
                )
    return causes


def _containers(field: str, containers: Any, volume_names: set[str], required: bool) -> list[Cause]:
    causes: list[Cause] = []
    if not containers:
        return [_required(field)] if required else []
    seen: set[str] = set()
    for i, container in enumerate(containers):
        if not isinstance(container, Mapping):
            continue
        at = f"{field}[{i}]"
        name = container.get("name")
        if not name:
            causes.append(_required(f"{at}.name"))
        elif len(name) > 63 or not DNS_LABEL.match(name):
            causes.append(_invalid(f"{at}.name", name, DNS_LABEL_MESSAGE))
        elif name in seen:
            causes.append(Cause("FieldValueDuplicate", f"Duplicate value: {_q(name)}", f"{at}.name"))
        seen.add(name or "")
        if not container.get("image"):
            causes.append(_required(f"{at}.image"))
        port_names: set[str] = set()
        for j, port in enumerate(container.get("ports") or []):
            number = port.get("containerPort")
            if isinstance(number, int) and not 0 < number < 65536:
                causes.append(
                    _invalid(
                        f"{at}.ports[{j}].containerPort", number, "must be between 1 and 65535, inclusive"
                    )
                )
            port_name = port.get("name")
            if port_name:
                if len(port_name) > 15 or not _IANA_SVC_NAME.match(port_name) or "--" in port_name:
                    causes.append(
                        _invalid(f"{at}.ports[{j}].name", port_name, "must be no more than 15 characters")
                    )
                elif port_name in port_names:
                    causes.append(
                        Cause(
                            "FieldValueDuplicate",
                            f"Duplicate value: {_q(port_name)}",
                            f"{at}.ports[{j}].name",
                        )
                    )
                port_names.add(port_name)
        causes += _resources(f"{at}.resources", container.get("resources"))
        for j, mount in enumerate(container.get("volumeMounts") or []):
            if mount.get("name") not in volume_names:
                causes.append(
                    Cause(
                        "FieldValueNotFound",
                        f"Not found: {_q(mount.get('name'))}",
                        f"{at}.volumeMounts[{j}].name",
                    )
                )
        for j, env in enumerate(container.get("env") or []):
            if not env.get("name"):
                causes.append(_required(f"{at}.env[{j}].name"))
    return causes


def pod_spec(
    field: str,
    spec: Any,
    restart_policies: tuple[str, ...] = ("Always", "OnFailure", "Never"),
    claim_templates: tuple[str, ...] = (),
) -> list[Cause]:
    if not isinstance(spec, Mapping):
        return [_required(field)]
    causes: list[Cause] = []
    volume_names: set[str] = set(claim_templates)
    for i, volume in enumerate(spec.get("volumes") or []):
        name = volume.get("name")
        if not name:
            causes.append(_required(f"{field}.volumes[{i}].name"))
        elif len(name) > 63 or not DNS_LABEL.match(name):
            causes.append(_invalid(f"{field}.volumes[{i}].name", name, DNS_LABEL_MESSAGE))
        elif name in volume_names:
            causes.append(
                Cause("FieldValueDuplicate", f"Duplicate value: {_q(name)}", f"{field}.volumes[{i}].name")
            )
        volume_names.add(name or "")
    causes += _containers(f"{field}.containers", spec.get("containers"), volume_names, True)
    causes += _containers(f"{field}.initContainers", spec.get("initContainers"), volume_names, False)
    policy = spec.get("restartPolicy")
    if policy is not None and policy not in restart_policies:
        supported = ", ".join(_q(p) for p in restart_policies)
        causes.append(
            Cause(
                "FieldValueNotSupported",
                f"Unsupported value: {_q(policy)}: supported values: {supported}",
                f"{field}.restartPolicy",
            )
        )
    causes += _labels(f"{field}.nodeSelector", spec.get("nodeSelector"))
    return causes


def _selector_and_template(rt: ResourceType, spec: Mapping[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    selector = spec.get("selector")
    if not isinstance(selector, Mapping):
        return [_required("spec.selector")]
    try:
        requirements = selectors.from_label_selector(selector)
    except selectors.SelectorError as error:
        return [_invalid("spec.selector", selector, str(error))]
    if not requirements:
        causes.append(_invalid("spec.selector", selector, f"empty selector is invalid for {rt.singular}"))
    causes += _labels("spec.selector.matchLabels", selector.get("matchLabels"))
    template = spec.get("template")
    if not isinstance(template, Mapping):
        return [*causes, _required("spec.template")]
    labels = get_path(template, "metadata", "labels") or {}
    causes += _labels("spec.template.metadata.labels", labels)
    if requirements and not selectors.matches(requirements, labels):
        causes.append(
            _invalid(
                "spec.template.metadata.labels",
                json.dumps(labels, separators=(",", ":")),
                "`selector` does not match template `labels`",
            )
        )
    claims = tuple(str(get_path(c, "metadata", "name")) for c in spec.get("volumeClaimTemplates") or [])
    restart_policies = ("OnFailure", "Never") if rt.kind == "Job" else ("Always",)
    causes += pod_spec("spec.template.spec", template.get("spec"), restart_policies, claims)
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and replicas < 0:
        causes.append(_invalid("spec.replicas", replicas, "must be greater than or equal to 0"))
    return causes


def _service(obj: Obj, old: Obj | None) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    kind = spec.get("type", "ClusterIP")
    types = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
    if kind not in types:
        supported = ", ".join(_q(t) for t in types)
        causes.append(
            Cause(
                "FieldValueNotSupported",
                f"Unsupported value: {_q(kind)}: supported values: {supported}",
                "spec.type",
            )
        )
    ports = spec.get("ports") or []
    if not ports and kind != "ExternalName" and spec.get("clusterIP") != "None":
        causes.append(_required("spec.ports"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        number = port.get("port")
        if isinstance(number, int) and not 0 < number < 65536:
            causes.append(_invalid(f"spec.ports[{i}].port", number, "must be between 1 and 65535, inclusive"))
        name = port.get("name")
        if len(ports) > 1 and not name:
            causes.append(_required(f"spec.ports[{i}].name"))
        if name and name in names:
            causes.append(
                Cause("FieldValueDuplicate", f"Duplicate value: {_q(name)}", f"spec.ports[{i}].name")
            )
        names.add(name or "")
        node_port = port.get("nodePort")
        if node_port is not None:
            if kind not in ("NodePort", "LoadBalancer"):
                causes.append(
                    _forbidden(f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'")
                )
            elif not 30000 <= node_port <= 32767:
                causes.append(
                    _invalid(
                        f"spec.ports[{i}].nodePort",
                        node_port,
                        "provided port is not in the valid range. The range of valid ports is 30000-32767",
                    )
                )
    causes += _labels("spec.selector", spec.get("selector"))
    if old is not None:
        old_ip = get_path(old, "spec", "clusterIP")
        new_ip = spec.get("clusterIP")
        if new_ip and old_ip and new_ip != old_ip:
            causes.append(_immutable("spec.clusterIP", new_ip))
    return causes


def _pvc(obj: Obj, old: Obj | None) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    if not spec.get("accessModes"):
        causes.append(
            _required("spec.accessModes")
            if old is None
            else _invalid("spec.accessModes", [], "at least 1 access mode is required")
        )
    storage = get_path(spec, "resources", "requests", "storage")
    if storage is None:
        causes.append(_required("spec.resources[storage]"))
    else:
        _, problems = _quantity("spec.resources.requests[storage]", storage)
        causes += problems
    if old is not None:
        old_spec = {
            k: v
            for k, v in (old.get("spec") or {}).items()
            if k not in ("resources", "volumeAttributesClassName", "volumeName")
        }
        new_spec = {
            k: v for k, v in spec.items() if k not in ("resources", "volumeAttributesClassName", "volumeName")
        }
        old_spec.setdefault("volumeMode", "Filesystem")
        new_spec.setdefault("volumeMode", "Filesystem")
        if "storageClassName" not in new_spec and "storageClassName" in old_spec:
            new_spec["storageClassName"] = old_spec["storageClassName"]
        if old_spec != new_spec:
            causes.append(
                _forbidden(
                    "spec",
                    "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
                )
            )
        old_storage = get_path(old, "status", "capacity", "storage") or get_path(
            old, "spec", "resources", "requests", "storage"
        )
        try:
            if (
                storage is not None
                and old_storage is not None
                and parse_quantity(storage) < parse_quantity(old_storage)
            ):
                causes.append(
                    _forbidden(
                        "spec.resources.requests.storage", "field can not be less than status.capacity"
                    )
                )
        except ValueError:
            pass
    return causes


def _quantity_map(field: str, values: Any) -> list[Cause]:
    causes: list[Cause] = []
    for name, value in (values or {}).items():
        causes += _quantity(f"{field}[{name}]", value)[1]
    return causes


def _config_data(obj: Obj, old: Obj | None, is_secret: bool) -> list[Cause]:
    causes: list[Cause] = []
    keys: set[str] = set()
    for field in ("data", "binaryData", "stringData"):
        for key, value in (obj.get(field) or {}).items():
            if len(key) > 253 or not _CONFIG_KEY.match(key):
                causes.append(
                    _invalid(
                        f"{field}[{key}]",
                        key,
                        "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                    )
                )
            if field != "stringData" and key in keys:
                causes.append(Cause("FieldValueDuplicate", f"Duplicate value: {_q(key)}", f"{field}[{key}]"))
            keys.add(key)
            if (is_secret and field == "data") or field == "binaryData":
                try:
                    base64.b64decode(str(value), validate=True)
                except (binascii.Error, ValueError):
                    causes.append(
                        _invalid(
                            f"{field}[{key}]",
                            "<secret contents redacted>" if is_secret else value,
                            "illegal base64 data",
                        )
                    )
    if old is not None and old.get("immutable"):
        for field in ("data", "binaryData"):
            if (obj.get(field) or {}) != (old.get(field) or {}):
                causes.append(_forbidden(field, "field is immutable when `immutable` is set"))
        if not obj.get("immutable"):
            causes.append(_forbidden("immutable", "field is immutable when `immutable` is set"))
    if is_secret and old is not None and obj.get("type", "Opaque") != old.get("type", "Opaque"):
        causes.append(_immutable("type", obj.get("type")))
    return causes


_STATEFULSET_MUTABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)


def _kind_specific(rt: ResourceType, obj: Obj, old: Obj | None) -> list[Cause]:
    spec = obj.get("spec") or {}
    kind = rt.kind
    causes: list[Cause] = []
    if kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job"):
        causes += _selector_and_template(rt, spec)
        if kind == "Job":
            causes += registry_batch.validate_job(obj, old)
        if (
            kind != "Job"
            and old is not None
            and (old.get("spec") or {}).get("selector") != spec.get("selector")
        ):
            causes.append(_immutable("spec.selector", spec.get("selector")))
        if kind == "StatefulSet" and old is not None:
            old_rest = {k: v for k, v in (old.get("spec") or {}).items() if k not in _STATEFULSET_MUTABLE}
            new_rest = {k: v for k, v in spec.items() if k not in _STATEFULSET_MUTABLE}
            for key in ("podManagementPolicy",):
                old_rest.setdefault(key, "OrderedReady")
                new_rest.setdefault(key, "OrderedReady")
            if old_rest != new_rest:
                causes.append(
                    _forbidden(
                        "spec",
                        "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                        "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and "
                        "'minReadySeconds' are forbidden",
                    )
                )
    elif kind == "Pod":
        causes += pod_spec("spec", spec)
        if old is not None:
            old_spec, new_spec = (
                _pod_spec_without_mutable(old.get("spec") or {}),
                _pod_spec_without_mutable(spec),
            )
            if old_spec != new_spec:
                causes.append(
                    _forbidden(
                        "spec",
                        "pod updates may not change fields other than `spec.containers[*].image`,"
                        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
                        "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                        "(allow it to be set to 1 if it was previously negative)",
                    )
                )
    elif kind == "Service":
        causes += _service(obj, old)
    elif kind == "PersistentVolumeClaim":
        causes += _pvc(obj, old)
    elif kind == "ResourceQuota":
        causes += _quantity_map("spec.hard", spec.get("hard"))
    elif kind == "LimitRange":
        for i, limit in enumerate(spec.get("limits") or []):
            for part in ("default", "defaultRequest", "max", "min", "maxLimitRequestRatio"):
                causes += _quantity_map(f"spec.limits[{i}].{part}", limit.get(part))
    elif kind in ("ConfigMap", "Secret"):
        causes += _config_data(obj, old, kind == "Secret")
    elif kind in ("RoleBinding", "ClusterRoleBinding"):
        if not obj.get("roleRef"):
            causes.append(_required("roleRef"))
        if old is not None and old.get("roleRef") != obj.get("roleRef"):
            causes.append(_invalid("roleRef", obj.get("roleRef"), "cannot change roleRef"))
    elif kind in ("Role", "ClusterRole"):
        for i, rule in enumerate(obj.get("rules") or []):
            if not rule.get("verbs"):
                causes.append(_required(f"rules[{i}].verbs"))
    elif kind == "NetworkPolicy":
        causes += _labels("spec.podSelector.matchLabels", get_path(spec, "podSelector", "matchLabels"))
    return causes


def _pod_spec_without_mutable(spec: Mapping[str, Any]) -> Any:
    copy = json.loads(json.dumps(spec))
    for key in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds", "nodeName"):
        copy.pop(key, None)
    for field in ("containers", "initContainers"):
        for container in copy.get(field) or []:
            container.pop("image", None)
            container.pop("resources", None)
    return copy


def validate(rt: ResourceType, obj: Obj, old: Obj | None = None) -> list[Cause]:
    """Every problem the API server would report for the object (empty when it is valid):
    the strict schema first, then the semantic checks."""
    causes = schema_causes(obj)
    causes += _metadata(rt, obj)
    causes += _kind_specific(rt, obj, old)
    return list(dict.fromkeys(causes))
