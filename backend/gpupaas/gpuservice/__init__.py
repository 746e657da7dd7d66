"""GPU service instances: containers run from instance templates inside a compute instance.

Pure building blocks (no database, GraphQL or Kubernetes client):

- `spec`: the spec of a container service as an instance template holds it and a service instance
  copies it, its checks and its JSON form.
- `placeholders`: `{{generated_*}}` placeholders, their values and their resolution.
- `builtins`: the instance templates every installation ships.
- `podspec`: the Kubernetes objects of a service instance (workload, Service, workspace claim).
- `plan`: a service instance's plan for the drivers (its objects, resources and outputs).
- `connect`: the connect links shown to users.
- `states`: the service instances' state machine.

With the database: `models`, `service` (instance templates), `instances` (service instances and
the steps of their runs), `endpoints` (what answers at simulated services' links); and the
GraphQL of each (`graphql`, `instances_graphql`).
"""
