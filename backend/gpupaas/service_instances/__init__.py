"""GPU service instances (GPUStack's "GPU service instance"): a container from an instance template,
run inside a deployed compute instance (its namespace, its quota, its GPUs).

- `states`: the state machine (PENDING -> STARTING -> RUNNING; STOPPING -> STOPPED; FAILED; DELETING).
- `models`: the service instance (its copy of the template's spec, its encrypted generated values).
- `service`: the rules: create, start, stop, restart, delete, who may, GPUs; and its runs' kind.
- `podspec`, `plan`: the Kubernetes objects of a service instance and its plan for the drivers.
- `connect`: the connect links shown to users.
- `endpoints`: what answers at simulated services' links.
- `graphql`: queries, mutations, the status subscription and `ComputeInstance.services`.
"""
