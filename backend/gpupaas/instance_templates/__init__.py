"""Instance templates: the containers users run in their compute instances (GPUStack's GPU service
templates): image, pull policy, start command, container disk, mount path, ports with access
params, env and GPU vendor; global (platform admins) or per project; some built in.

- `spec`: a container service's spec as a template holds it and a service instance copies it,
  its checks and its JSON form (pure).
- `placeholders`: `{{generated_*}}` placeholders, their values and their resolution (pure).
- `builtins`: the instance templates every installation ships.
- `models`, `service` (the rules), `graphql`.
"""
