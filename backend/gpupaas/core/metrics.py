"""Metrics: what /metrics exports (README, "Observe"), one registry per process's app or runtime.

Each `Metrics` has its own `CollectorRegistry` (never prometheus_client's global one), so that
several apps in one process (tests) do not share or collide. Recording costs a dictionary lookup
and an addition, no I/O; what needs the database (the outbox, instances by status) is read when
/metrics is scraped (api/metrics.py), never per request.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# GraphQL operations are mostly fast reads; runs take seconds to many minutes.
OPERATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
RUN_BUCKETS = (0.1, 0.5, 1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)

# Operation names come from clients: only a bounded number of well-formed names become labels,
# the rest are counted as "other" (a client cannot grow the registry without limit).
MAX_OPERATION_NAMES = 500
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
ANONYMOUS_OPERATION = "anonymous"
OTHER_OPERATION = "other"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._operation_names: set[str] = set()
        self.operation_seconds = Histogram(
            "gpupaas_graphql_operation_seconds",
            "Time to run a GraphQL query or mutation (parse, validate, execute), by operation name and type.",
            ["operation", "type"],
            buckets=OPERATION_BUCKETS,
            registry=self.registry,
        )
        self.request_seconds = Histogram(
            "gpupaas_http_request_seconds",
            "Time to answer an HTTP request (websockets aside), by method, route and status code.",
            ["method", "route", "status"],
            buckets=OPERATION_BUCKETS,
            registry=self.registry,
        )
        self.errors = Counter(
            "gpupaas_graphql_errors",
            "GraphQL errors returned, by their extensions.code (UNAUTHENTICATED, FORBIDDEN, NOT_FOUND, "
            "INVALID, GRAPHQL_VALIDATION_FAILED, INTERNAL, ...).",
            ["code"],
            registry=self.registry,
        )
        self.run_seconds = Histogram(
            "gpupaas_run_duration_seconds",
            "Runs finished by this process's worker, by action and outcome (succeeded, failed, "
            "canceled), with the time from their start to their end.",
            ["action", "outcome"],
            buckets=RUN_BUCKETS,
            registry=self.registry,
        )
        # Read at scrape time (api/metrics.py).
        self.outbox_backlog = Gauge(
            "gpupaas_outbox_backlog",
            "Outbox rows not yet published to the bus (all processes: read from the database).",
            registry=self.registry,
        )
        self.outbox_oldest_age = Gauge(
            "gpupaas_outbox_oldest_age_seconds",
            "Age of the oldest outbox row not yet published (0 when none is waiting).",
            registry=self.registry,
        )
        self.instances = Gauge(
            "gpupaas_instances",
            "Instances by kind (compute, service) and status (all projects: read from the database).",
            ["kind", "status"],
            registry=self.registry,
        )
        self._instance_labels: set[tuple[str, str]] = set()
        self._lag_labels: set[tuple[str, str, str]] = set()
        gpu_labels = ["cluster", "vendor", "model"]
        self.gpus_capacity = Gauge(
            "gpupaas_gpus_capacity",
            "GPUs the cluster's nodes have (as its last check saw them), per vendor and model.",
            gpu_labels,
            registry=self.registry,
        )
        self.gpus_allocated = Gauge(
            "gpupaas_gpus_allocated",
            "GPUs held by deployed compute instances, per cluster, vendor and model.",
            gpu_labels,
            registry=self.registry,
        )
        self.gpus_free = Gauge(
            "gpupaas_gpus_free",
            "GPUs neither held nor missing, per cluster, vendor and model.",
            gpu_labels,
            registry=self.registry,
        )

        # The worker's (workers/worker.py): read when scraped, only with the Kafka bus.
        self.kafka_lag = Gauge(
            "gpupaas_kafka_consumer_lag",
            "Messages of an assigned partition this process's consumer has not read yet (the "
            "partition's high watermark minus the consumer's position), by group, topic, partition.",
            ["group", "topic", "partition"],
            registry=self.registry,
        )
        # Labelled by the worker's name so that a process without a worker exports no sample
        # (an unlabelled gauge would say 0, "not heartbeating since 1970").
        self.worker_heartbeat = Gauge(
            "gpupaas_worker_heartbeat_timestamp_seconds",
            "When this process's worker last showed it was consuming (Unix time): it stops moving "
            "when the worker's loop has died or the process hangs.",
            ["worker"],
            registry=self.registry,
        )
        # Consumers that healed (events/bus.py, "Healing") and the status watchdog's reconnects
        # (events/watchdog.py): counted where they happen, so they say something only when the
        # broker lost messages under a consumer or a process stopped hearing status events.
        self.consumer_resets = Counter(
            "gpupaas_kafka_consumer_resets",
            "Times this process's consumers moved a partition's position to a safe point because it "
            "was no longer valid (beyond_high_watermark, out_of_range: a broker that lost messages; "
            "reassigned: a partition new to a broadcast consumer), by topic, partition and reason.",
            ["topic", "partition", "reason"],
            registry=self.registry,
        )
        self.status_reconnects = Counter(
            "gpupaas_status_consumer_reconnects",
            "Times this API process's status consumer was reconnected by the watchdog: the outbox "
            "published status events that it did not receive within GPUPAAS_STATUS_WATCHDOG_SECONDS.",
            registry=self.registry,
        )
        # What a scrape reads first besides the database (api/metrics.py): the consumers' lag.
        self.scrape_readers: list[Callable[[], Awaitable[None]]] = []

    def on_scrape(self, read: Callable[[], Awaitable[None]]) -> None:
        """`read` is awaited at each scrape, before the registry is written out."""
        self.scrape_readers.append(read)

    def set_kafka_lag(self, group: str, lags: dict[tuple[str, int], int]) -> None:
        """The lag of each partition `group`'s consumer holds now, replacing what it held before
        (a partition given to another member leaves the metric)."""
        held = [labels for labels in self._lag_labels if labels[0] == group]
        for labels in held:
            self.kafka_lag.remove(*labels)
        self._lag_labels -= set(held)
        for (topic, partition), lag in lags.items():
            labels = (group, topic, str(partition))
            self._lag_labels.add(labels)
            self.kafka_lag.labels(*labels).set(lag)

    def count_reset(self, topic: str, partition: int, reason: str) -> None:
        self.consumer_resets.labels(topic, str(partition), reason).inc()

    def observe_operation(self, name: str | None, kind: str, seconds: float) -> None:
        self.operation_seconds.labels(self._operation_label(name), kind).observe(seconds)

    def count_error(self, code: str) -> None:
        self.errors.labels(code).inc()

    def observe_run(self, action: str, outcome: str, seconds: float) -> None:
        self.run_seconds.labels(action, outcome).observe(max(seconds, 0.0))

    def set_instances(self, kind: str, counts: dict[str, int]) -> None:
        """The counts of one kind's instances by status; a status no longer seen goes back to 0."""
        for label in [label for label in self._instance_labels if label[0] == kind]:
            if label[1] not in counts:
                self.instances.labels(*label).set(0)
        for status, count in counts.items():
            self._instance_labels.add((kind, status))
            self.instances.labels(kind, status).set(count)

    def set_gpus(self, rows: list[tuple[str, str, str, int, int, int]]) -> None:
        """(cluster, vendor, model, capacity, allocated, free) for every cluster and model, replacing
        what was there (a removed cluster or model leaves the metrics)."""
        gauges = (self.gpus_capacity, self.gpus_allocated, self.gpus_free)
        for gauge in gauges:
            gauge.clear()
        for cluster, vendor, model, *values in rows:
            for gauge, count in zip(gauges, values, strict=True):
                gauge.labels(cluster, vendor, model).set(count)

    def gauge_of(self, name: str, documentation: str, read: Callable[[], float]) -> Gauge:
        """A gauge whose value is read from the process when scraped (open websockets, say)."""
        gauge = Gauge(name, documentation, registry=self.registry)
        gauge.set_function(read)
        return gauge

    def _operation_label(self, name: str | None) -> str:
        if not name:
            return ANONYMOUS_OPERATION
        if name in self._operation_names:
            return name
        if len(self._operation_names) >= MAX_OPERATION_NAMES or not _NAME.fullmatch(name):
            return OTHER_OPERATION
        self._operation_names.add(name)
        return name
