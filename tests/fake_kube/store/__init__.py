"""The state of the fake cluster and the API semantics of every verb.

Objects are kept per kind, keyed by (namespace, name). Every write bumps one cluster-wide
resourceVersion (a counter, sent as a string), is recorded in a bounded event history (for
watches that resume from a resourceVersion) and is offered to the open watches and to the
controllers. All methods run on the server's event loop: they are synchronous, so each request
is atomic with respect to the others.

The verbs follow the Kubernetes API conventions: create (201), get, list (label and field
selectors, limit/continue), replace (PUT, resourceVersion precondition), patch (server-side apply,
JSON merge, strategic merge, JSON patch), delete (propagationPolicy, finalizers, graceful pod
deletion, Terminating namespaces), deletecollection and watch.

The store is one class, `Store`, put together from one mixin per part of the API semantics:

- `state`: the objects, the resourceVersion, the event history, reading, committing and watches;
- `watch`: one open watch (`Watcher`) and the events it is offered (`WatchEvent`);
- `admit`: the checks and admission every write goes through (namespaces, defaults, quotas,
  Service cluster IPs and node ports, validation);
- `delete`: delete, propagation, finalizers, graceful pod deletion, deletecollection;
- `writes`: create, replace and the scale subresource;
- `patch`: the four patch types, server-side apply among them;
- `internal`: the writes of the controllers and of the tests' controls (no admission).
"""

from __future__ import annotations

from tests.fake_kube.store.internal import InternalWrites
from tests.fake_kube.store.patch import APPLY, JSON_PATCH, MERGE, STRATEGIC, Patching
from tests.fake_kube.store.state import Listener
from tests.fake_kube.store.watch import Watcher, WatchEvent


class Store(Patching, InternalWrites):
    """The state of the fake cluster and every verb of its API."""


__all__ = ["APPLY", "JSON_PATCH", "MERGE", "STRATEGIC", "Listener", "Store", "WatchEvent", "Watcher"]
