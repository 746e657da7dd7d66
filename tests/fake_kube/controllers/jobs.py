"""The Job controller (batch/v1), and how a Job's pods end.

A Job runs `parallelism` pods at a time (`<job>-<suffix>`, owned by it, labelled with its
controller uid and name) until `completions` of them have succeeded: then it is Complete
(conditions SuccessCriteriaMet and Complete, completionTime) and its other pods are deleted. Pods
that fail count against `backoffLimit` (for restartPolicy OnFailure, their containers' restarts
do): past it the Job is Failed (FailureTarget and Failed, reason BackoffLimitExceeded, "Job has
reached the specified backoff limit") and its running pods are deleted; before it, a failed pod is
replaced. A suspended Job deletes its pods. status holds active, ready, succeeded, failed,
terminating, startTime.

The fake's pods do not run programs: a Job's pod ends when a test says so, with `complete_pod`
(exit code 0: Succeeded; otherwise Failed for restartPolicy Never, a restart for OnFailure) or
`fail_pod(..., phase="Failed")`, or by itself `job_pod_seconds` after it runs (None: never).
"""

from __future__ import annotations

from tests.fake_kube import admission
from tests.fake_kube.controllers.base import (
    CONTROLLER_MANAGER,
    KUBELET,
    POD,
    ControllerBase,
    _condition,
    _is_ready,
    _owner_ref,
    _set_condition,
)
from tests.fake_kube.errors import ApiError
from tests.fake_kube.resources import ResourceType, resource_for
from tests.fake_kube.store import Store
from tests.fake_kube.util import Obj, deep, get_path, now

JOB = resource_for("batch/v1", "Job")
JOB_CONTROLLER = "job-controller"


def _finished(job: Obj) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in get_path(job, "status", "conditions") or []
    )


def _job_owner(pod: Obj) -> str | None:
    for ref in get_path(pod, "metadata", "ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "Job":
            return str(ref.get("name"))
    return None


def _restarts(pod: Obj) -> int:
    statuses = [
        *(get_path(pod, "status", "initContainerStatuses") or []),
        *(get_path(pod, "status", "containerStatuses") or []),
    ]
    return sum(int(s.get("restartCount") or 0) for s in statuses)


class Jobs(ControllerBase):
    """The Job controller and the ending of Job pods (see the module's docstring)."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.job_pod_seconds: float | None = None
        store.listeners.append(self._job_objects_changed)

    def _job_objects_changed(self, rt: ResourceType, kind: str, obj: Obj, old: Obj | None) -> None:
        namespace = str(get_path(obj, "metadata", "namespace") or "")
        if rt is JOB and kind != "DELETED":
            self.enqueue("job", namespace, str(obj["metadata"]["name"]))
        elif rt is POD and (owner := _job_owner(obj)) is not None:
            self.enqueue("job", namespace, owner)
            started = _is_ready(obj) and (old is None or not _is_ready(old))
            if kind != "DELETED" and started and self.job_pod_seconds is not None:
                name, uid = str(obj["metadata"]["name"]), str(obj["metadata"]["uid"])
                self.later(self.job_pod_seconds, lambda: self._end_if_running(namespace, name, uid))

    def _end_if_running(self, namespace: str, name: str, uid: str) -> None:
        pod = self.store.find(POD, namespace, name)
        if (
            pod is not None
            and pod["metadata"]["uid"] == uid
            and get_path(pod, "status", "phase") == "Running"
        ):
            self.complete_pod(namespace, name, 0)

    # The controller ------------------------------------------------------------------------------

    def _reconcile_job(self, namespace: str, name: str) -> None:
        job = self.store.find(JOB, namespace, name)
        if job is None or get_path(job, "metadata", "deletionTimestamp") or _finished(job):
            return
        spec = job.get("spec") or {}
        pods = self._owned(POD, namespace, job["metadata"]["uid"])
        live = [p for p in pods if not get_path(p, "metadata", "deletionTimestamp")]
        active = [p for p in live if not admission.is_terminal(p)]
        succeeded = sum(1 for p in pods if get_path(p, "status", "phase") == "Succeeded")
        failed = sum(1 for p in pods if get_path(p, "status", "phase") == "Failed")
        terminating = len(pods) - len(live)
        backoff_limit = int(spec.get("backoffLimit", 6))
        completions = spec.get("completions")
        parallelism = int(spec.get("parallelism", 1))
        on_failure = get_path(spec, "template", "spec", "restartPolicy") == "OnFailure"
        conditions: list[Obj] = list(get_path(job, "status", "conditions") or [])
        completion_time = None
        outcome = None
        restarts = sum(map(_restarts, active)) if on_failure else 0
        past_on_failure = on_failure and (restarts > 0 if backoff_limit == 0 else restarts >= backoff_limit)
        if failed > backoff_limit or past_on_failure:
            outcome = (
                "Failed",
                "FailureTarget",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            )
        elif succeeded >= (int(completions) if completions is not None else 1) and (
            completions is not None or not active
        ):
            outcome = (
                "Complete",
                "SuccessCriteriaMet",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            )
        if outcome is not None:
            final, target, reason, message = outcome
            for pod in active:
                self.store.delete_object(POD, pod)
            for kind in (target, final):
                if final == "Complete" and kind == "Complete":
                    conditions = _set_condition(conditions, _condition(kind, "True"))
                else:
                    conditions = _set_condition(conditions, _condition(kind, "True", reason, message))
            if final == "Complete":
                completion_time = now()
                self.event(JOB, job, "Normal", "Completed", "Job completed", JOB_CONTROLLER)
            else:
                self.event(JOB, job, "Warning", reason, message, JOB_CONTROLLER)
            active = []
        elif spec.get("suspend"):
            for pod in active:
                self.store.delete_object(POD, pod)
            active = []
            conditions = _set_condition(
                conditions, _condition("Suspended", "True", "JobSuspended", "Job suspended")
            )
        else:
            remaining = (int(completions) - succeeded) if completions is not None else parallelism
            for _ in range(max(min(parallelism, remaining) - len(active), 0)):
                try:
                    active.append(self._create_job_pod(job))
                except ApiError as error:
                    self.event(
                        JOB,
                        job,
                        "Warning",
                        "FailedCreate",
                        f"Error creating: {error.message}",
                        JOB_CONTROLLER,
                    )
                    break
        ready = sum(1 for p in active if _is_ready(p))

        def status(new: Obj) -> None:
            current = new.get("status") or {}
            result: Obj = {
                "startTime": current.get("startTime") or now(),
                "terminating": terminating,
                "ready": ready,
                "uncountedTerminatedPods": {},
            }
            for key, value in (("active", len(active)), ("succeeded", succeeded), ("failed", failed)):
                if value:
                    result[key] = value
            if conditions:
                result["conditions"] = conditions
            if completion_time is not None:
                result["completionTime"] = completion_time
            new["status"] = result

        self.store.internal_update(JOB, job, status, manager=CONTROLLER_MANAGER, subresource="status")

    def _create_job_pod(self, job: Obj) -> Obj:
        metadata = job["metadata"]
        template = deep(get_path(job, "spec", "template") or {})
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "generateName": f"{metadata['name']}-",
                "namespace": metadata["namespace"],
                "labels": dict(get_path(template, "metadata", "labels") or {}),
                "ownerReferences": [_owner_ref(JOB, job)],
            },
            "spec": template.get("spec") or {},
        }
        if get_path(template, "metadata", "annotations"):
            body["metadata"]["annotations"] = dict(template["metadata"]["annotations"])
        created = self.store.create(POD, metadata["namespace"], body, manager=CONTROLLER_MANAGER)
        self.event(
            JOB,
            job,
            "Normal",
            "SuccessfulCreate",
            f"Created pod: {created['metadata']['name']}",
            JOB_CONTROLLER,
        )
        return created

    # How a Job's pod ends ------------------------------------------------------------------------

    def complete_pod(self, namespace: str, name: str, exit_code: int = 0) -> Obj:
        """The pod's containers exit with `exit_code`, as a kubelet reports it (see the module's
        docstring). Returns the pod."""
        pod = self.store.find(POD, namespace, name)
        if pod is None:
            raise KeyError(f"no pod {namespace}/{name}")
        if get_path(pod, "status", "phase") != "Running":
            raise ValueError(
                f"pod {namespace}/{name} is not running, it is {get_path(pod, 'status', 'phase')}"
            )
        policy = get_path(pod, "spec", "restartPolicy", default="Always")
        finished = now()
        reason = "Completed" if exit_code == 0 else "Error"
        terminated = {"exitCode": exit_code, "reason": reason, "startedAt": finished, "finishedAt": finished}

        def end(new: Obj) -> None:
            status = new.setdefault("status", {})
            statuses = status.get("containerStatuses") or []
            if exit_code != 0 and policy != "Never":  # the kubelet restarts the container
                for container in statuses:
                    container["lastState"] = {"terminated": dict(terminated)}
                    container["restartCount"] = int(container.get("restartCount") or 0) + 1
                return
            status["phase"] = "Succeeded" if exit_code == 0 else "Failed"
            for container in statuses:
                container["state"] = {"terminated": dict(terminated)}
                container["ready"] = False
                container["started"] = False
            conditions = status.get("conditions") or []
            for kind in ("Ready", "ContainersReady"):
                conditions = _set_condition(conditions, _condition(kind, "False", "PodCompleted"))
            status["conditions"] = conditions

        updated = self.store.internal_update(POD, pod, end, manager=KUBELET, subresource="status")
        return deep(updated or pod)
