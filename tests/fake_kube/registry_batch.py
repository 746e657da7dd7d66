"""batch/v1 as the API server's registry treats it: Job defaults (completions, parallelism,
backoffLimit, completion mode, the generated selector and pod labels) and validation (its selector is
immutable; validation.py checks that its pods restart OnFailure or Never); CronJob defaults."""

from __future__ import annotations

from tests.fake_kube.schema import Cause
from tests.fake_kube.util import Obj, get_path

CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"


def default_job(obj: Obj) -> None:
    """SetDefaults_Job and the registry's generated selector (manualSelector unset)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    metadata = obj.get("metadata") or {}
    uid, name = metadata.get("uid"), metadata.get("name")
    if uid and not spec.get("manualSelector") and "selector" not in spec:
        spec["selector"] = {"matchLabels": {CONTROLLER_UID: uid}}
        labels = spec.setdefault("template", {}).setdefault("metadata", {}).setdefault("labels", {})
        labels.update({CONTROLLER_UID: uid, JOB_NAME: name, "controller-uid": uid, "job-name": name})


def default_cron_job(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)


def validate_job(obj: Obj, old: Obj | None) -> list[Cause]:
    """What a Job's update may not change (its pods' restart policy is checked with the pod spec)."""
    if old is not None and get_path(old, "spec", "selector") != get_path(obj, "spec", "selector"):
        return [Cause("FieldValueInvalid", "Invalid value: field is immutable", "spec.selector")]
    return []
