"""Environment templates: parsing, checking and rendering the versions of environment templates.

A version's `resources` is a YAML stream of Kubernetes manifests with `{{ ... }}` placeholders in
its strings. The YAML is parsed first and the placeholders are then substituted inside the parsed
strings, so an input value is only ever data: it can never add keys, documents or YAML tags. A
string that is exactly one placeholder takes the value's own type (a number stays a number).

- problems.py: where something is in a template (`Path`) and what is wrong there (`Problem`,
  `TemplateError`).
- parse.py: the YAML, read the way Kubernetes reads it, and the shape of each document.
- placeholders.py: the `{{ ... }}` syntax and the variables a placeholder may name.
- rendering.py: `render` and `render_outputs`, what a deploy uses.
- schema.py: `validate_manifest`, what the Kubernetes API would reject in a rendered object.
- policy.py: the tenant confinement, what a project's template may ask of a shared cluster (kinds,
  namespaces, RBAC, pod settings, quotas), checked on rendered objects.
- checks.py: `check_version`, everything wrong with a version when it is added (never when a user
  deploys): shape, variables, input and output definitions, and a trial render against the schema
  and the confinement.
"""
