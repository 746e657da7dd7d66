"""The audit log: who changed what, when, from where and with which credential, and the outcome.

`recorder` holds the per-request audit scope and `record()`, which the services call inside the
transaction of each change; the GraphQL layer (audit/graphql.py) opens a scope for every mutation
and records refusals on its own. `service` reads the log (rights, filters, paging) and purges it.
"""
