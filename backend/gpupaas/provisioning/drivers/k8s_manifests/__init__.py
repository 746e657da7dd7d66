"""Pure functions behind the `kubernetes` driver (drivers/kubernetes/).

No network and no `kubernetes` import here: everything the driver decides is a function of plain
dicts (objects as the API serves them), so it can be tested by building objects and asserting.

- objects.py: reading an object's fields; its identity, the order objects are applied in, the
  namespace they default to, the labels they must carry, pod templates stamped with them.
- api.py: discovery (an APIResourceList -> `ApiResource`: kind -> plural, namespaced, verbs) and
  server-side apply, get, delete, list and watch as plain `Request`s the driver sends.
- errors.py: a Kubernetes Status -> PermanentError or TemporaryError (Transient: retried) with a
  message a person can act on.
- ownership.py: whose an object is (the owner label; who applied it), and the refusal to take
  over what is not the instance's.
- pods.py: why a pod failed or cannot be scheduled, which pods count, which belong to a
  Deployment's current rollout.
- readiness.py: whether a Namespace, PersistentVolumeClaim, Pod, Deployment, StatefulSet or Job is
  ready, and what it waits for.
- drift.py: the health of an instance from its pods, and `DriftTracker`, which turns a list and the
  watch events after it into the changes to report (FAILED, then READY again).
- nodes.py: allocatable CPU and memory, GPUs per extended resource, the GPU model from node labels.
"""
