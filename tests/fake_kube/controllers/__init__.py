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
  restartPolicy Always, phase Failed for Never; ImagePullBackOff and similar as waiting states);
  `crash_loop` makes it crash again and again, restartCount growing. `add_nodes` adds nodes
  later (a node pool scaling up), their GPUs later still (a device plugin starting).
- Deployment -> ReplicaSet -> Pods (pod-template-hash, the revision annotation on both, owner
  references, rollout of a changed template, Available/Progressing/ReplicaFailure conditions,
  progressDeadlineSeconds, pod creation retried with a backoff after a quota refused it);
  StatefulSet -> Pods <name>-<ordinal> (OrderedReady or Parallel, controller-revision-hash) and
  PVCs from its volumeClaimTemplates; both controllers observe a new generation `observe_delay`
  seconds late. PVCs become Bound; Services of type LoadBalancer get an ingress IP
  `loadbalancer_delay` seconds after they are made.
- Jobs (pods until completions succeed, backoffLimit, Complete/Failed) and DaemonSets (a pod per
  node that qualifies); claims bind to PersistentVolumes, provisioned from their StorageClass
  (WaitForFirstConsumer: once a pod that uses the claim is scheduled).
- Service-account token Secrets are filled in; aggregated ClusterRoles gather their rules.
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
`daemonsets`, `jobs`, `volumes`, `pvcs_services_quotas`, `namespaces`, `garbage_collector`,
`tokens` and `rbac_aggregation`, on the queue, timers and Events of
`base`. `nodes` builds the Node objects of the fake cluster.
"""

from tests.fake_kube.controllers.cluster import Controllers
from tests.fake_kube.controllers.nodes import DEFAULT_NODES, node

__all__ = ["DEFAULT_NODES", "Controllers", "node"]
