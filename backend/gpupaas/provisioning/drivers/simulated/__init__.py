"""The simulated cluster: the embedded default driver, a Kubernetes cluster that exists only in the
database, for `make run`, demos and tests.

- driver.py: `SimulatedDriver`, the Driver (drivers/base.py): the phases of an apply and a
  destroy, what `observe` reports, `check`.
- admission.py: what a plan asks for and where it fits in the inventory's capacity.
- state.py: the allocations and applied objects in the database, and the transactions that
  admit and store them.
- server.py: the fields the simulated API server fills in (uids, resourceVersions, node ports).
- failures.py: failure injection through a plan's annotations.
- journal.py: its pods, their containers' logs and its events, which followers read live.
- inspection.py: what every node holds (`cluster_state`).
- endpoints.py: what answers at the node ports of the services that run on it.
"""
