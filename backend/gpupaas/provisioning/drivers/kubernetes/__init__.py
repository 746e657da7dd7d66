"""The `kubernetes` driver, which applies plans to a real cluster through the official client.

What it decides (order, requests, readiness, failure reasons, error classes) are pure functions in
drivers/k8s_manifests/; this package sends requests and waits.

- driver.py: `KubernetesDriver`, the Driver (drivers/base.py), and `check`.
- connection.py: `ClusterConnection` and the `Transport` to one API server; the only module of
  gpupaas that imports `kubernetes`.
- api.py: requests as the driver makes them (JSON answers, DriverErrors, lists, discovery,
  retries of transient faults).
- items.py: a plan's objects as they are applied, and reading them back.
- pods.py: a plan's pods, and those of the current revision of their controllers.
- apply.py, destroy.py, observe.py: the three calls a run makes.
- owned.py, prune.py: what an instance owns (never what it did not create), and pruning what the
  plan no longer has.
- drift.py: the watch on pods that reports instances that fail or recover.
- logs.py: container logs (pods/log) and the events of what an instance owns, followed live.
"""
