"""Deployment runs: every deploy, destroy, start, stop or restart of anything gpupaas deploys.

- `states`: what a run does (RunAction) and where it is (RunStatus).
- `models`: the run (DeploymentRun), kept as history.
- `kinds`: what a kind of subject supplies (RunKind): its model, states, events, commands, plans.
- `lifecycle`: the one implementation of a run's life, for every kind: queue with its command,
  claim with a lease, heartbeat, progress, finish, re-queue, drift reports, status events.
"""
