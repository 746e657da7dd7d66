"""One open watch of the fake API server and the events offered to it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from tests.fake_kube import selectors
from tests.fake_kube.resources import ResourceType
from tests.fake_kube.util import Obj


@dataclass(frozen=True)
class WatchEvent:
    rv: int
    rt_id: str
    type: str  # ADDED, MODIFIED, DELETED
    obj: Obj
    old: Obj | None


class Watcher:
    """One open watch: a queue of events for one kind, namespace and selectors. None in the
    queue ends the stream."""

    def __init__(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: list[selectors.Requirement],
        fields: list[selectors.FieldRequirement],
    ) -> None:
        self.rt = rt
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.queue: asyncio.Queue[Obj | None] = asyncio.Queue()
        self.closed = False

    def matches(self, obj: Obj) -> bool:
        metadata = obj.get("metadata") or {}
        if self.namespace is not None and metadata.get("namespace") != self.namespace:
            return False
        return selectors.matches(self.labels, metadata.get("labels")) and selectors.fields_match(
            self.fields, obj
        )

    def offer(self, event: WatchEvent) -> None:
        if self.closed or event.rt_id != self.rt.id:
            return
        now_matches = self.matches(event.obj)
        before = event.old is not None and self.matches(event.old)
        kind = event.type
        if kind == "MODIFIED":
            if now_matches and not before:
                kind = "ADDED"
            elif before and not now_matches:
                kind = "DELETED"
            elif not now_matches:
                return
        elif not now_matches:
            return
        self.queue.put_nowait({"type": kind, "object": event.obj})

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(None)
