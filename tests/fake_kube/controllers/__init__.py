"""The cluster behind the API: scheduler, kubelet and controllers, controllable from tests.

- Scheduler: binds a pod to the first node (by name) where it fits: unschedulable nodes, node
  selectors and required node affinity, NoSchedule/NoExecute taints (as kube-scheduler reads them:
  `node_affinity`), and resources (allocatable
  minus the requests of the pods already on the node, including `pods`). When nothing fits, the
  pod stays Pending with PodScheduled=False, reason Unschedulable and the scheduler's message
  ("0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: ..."), and a
  FailedScheduling Event. Pending pods are retried when nodes or pods change.
- Kubelet: a bound pod is ContainerCreating, then Running and Ready after `pod_delay` seconds;
  a deleted pod on a node terminates after `termination_delay` seconds. `fail_pod` makes a
  container fail the way a kubelet reports it (CrashLoopBackOff with lastState terminated for
  restartPolicy Always, phase Failed for Never; ImagePullBackOff and similar as waiting states).
- Deployment -> ReplicaSet -> Pods (pod-template-hash, owner references, rollout of a changed
  template, Available/Progressing/ReplicaFailure conditions, progressDeadlineSeconds);
  StatefulSet -> Pods <name>-<ordinal> (OrderedReady or Parallel) and PVCs from its
  volumeClaimTemplates; PVCs become Bound; Services of type LoadBalancer get an ingress IP.
- Namespaces: a new one gets the "default" ServiceAccount and the kube-root-ca.crt ConfigMap; a
  deleted one is Terminating for `namespace_deletion_delay` seconds, then its content is deleted,
  and it disappears once nothing is left in it.
- Garbage collection by ownerReferences: background (dependents deleted after the owner),
  foreground (the owner keeps deletionTimestamp and the foregroundDeletion finalizer until its
  dependents are gone) and orphan (owner references removed).
- ResourceQuota status (hard and used).

Work is queued and done on the event loop soon after the change that caused it, so API answers
show the state before the controllers react, as with a real cluster.

The controllers are one class, `Controllers` (in `cluster`), put together from one mixin per
component: `scheduler`, `kubelet`, `deployments` (Deployments and ReplicaSets), `statefulsets`,
`pvcs_services_quotas`, `namespaces` and `garbage_collector`, on the queue, timers and Events of
`base`. `nodes` builds the Node objects of the fake cluster.
"""

from tests.fake_kube.controllers.cluster import Controllers
from tests.fake_kube.controllers.nodes import DEFAULT_NODES, node

__all__ = ["DEFAULT_NODES", "Controllers", "node"]
