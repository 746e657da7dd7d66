"""A namespace on a shared broker: prefixes every topic and consumer group of one gpupaas
installation, so that several (staging and production, or the tests) can share one Kafka cluster.
Messages come back with the prefix removed, so nothing else knows about it."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence

from gpupaas.events.bus import Assignment, Bus, Consumer, Message, Reset, ResetCallback


class NamespacedConsumer:
    def __init__(self, inner: Consumer, prefix: str) -> None:
        self.inner = inner
        self.prefix = prefix

    async def start(self) -> None:
        await self.inner.start()

    async def stop(self) -> None:
        await self.inner.stop()

    async def getmany(self, timeout: float, max_records: int = 100) -> list[Message]:
        messages = await self.inner.getmany(timeout, max_records)
        return [dataclasses.replace(m, topic=m.topic.removeprefix(self.prefix)) for m in messages]

    async def commit(self, messages: Sequence[Message]) -> None:
        await self.inner.commit([dataclasses.replace(m, topic=self.prefix + m.topic) for m in messages])

    def assignment(self) -> Assignment:
        return {(topic.removeprefix(self.prefix), partition) for topic, partition in self.inner.assignment()}

    async def lag(self) -> dict[tuple[str, int], int] | None:
        lags = await self.inner.lag()
        if lags is None:
            return None
        return {(topic.removeprefix(self.prefix), partition): n for (topic, partition), n in lags.items()}


class NamespacedBus:
    def __init__(self, inner: Bus, namespace: str) -> None:
        self.inner = inner
        self.prefix = f"{namespace}." if namespace else ""

    async def start(self) -> None:
        await self.inner.start()

    async def stop(self) -> None:
        await self.inner.stop()

    async def ensure_topics(self, topics: Sequence[str]) -> None:
        await self.inner.ensure_topics([self.prefix + t for t in topics])

    async def publish(
        self, topic: str, key: str | None, value: bytes, headers: Sequence[tuple[str, bytes]] = ()
    ) -> None:
        await self.inner.publish(self.prefix + topic, key, value, headers)

    def consumer(
        self,
        topics: Sequence[str],
        *,
        group: str | None,
        on_assigned: Callable[[Assignment], Awaitable[None]] | None = None,
        on_revoked: Callable[[Assignment], Awaitable[None]] | None = None,
        on_reset: ResetCallback | None = None,
    ) -> Consumer:
        reported = None
        if on_reset is not None:
            callback = on_reset

            async def reported(reset: Reset) -> None:
                await callback(dataclasses.replace(reset, topic=reset.topic.removeprefix(self.prefix)))

        inner = self.inner.consumer(
            [self.prefix + t for t in topics],
            group=self.prefix + group if group else None,
            on_assigned=on_assigned,
            on_revoked=on_revoked,
            on_reset=reported,
        )
        return NamespacedConsumer(inner, self.prefix)
