"""The rules of the catalog, one module a concern; none of them knows GraphQL.

- `templates`: environment templates and their versions, the built-in ones' sync.
- `profiles`: compute profiles, their sharing, the profile list and the catalog.
- `profile_settings`: a profile's settings of its version's inputs and outputs, checked.
- `definitions`: the inputs and outputs a version declares, as stored; override policies and the
  mask for sensitive values (compute's snapshots read them too).
- `visibility`: what a caller may see: the projects its lists are for, template internals,
  input values (sensitive ones masked), share targets; the lists' profiles as shown.

Project ADMINs manage their project's templates and profiles; MEMBERs read them (template
internals hidden) and see the catalog; anything in a project the caller cannot see is reported
as not existing. Built-in templates live in the system project: every project may pin them,
only platform admins change them.
"""
