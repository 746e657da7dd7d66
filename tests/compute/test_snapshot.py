"""The typed snapshot (compute/snapshot.py): what it reads from the JSON column, rows written before
it had a version included, and that writing and reading it again changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpupaas.catalog.models import AllocationType
from gpupaas.compute.snapshot import Snapshot, SnapshotResources

# A row as the first releases wrote it: no snapshotVersion, no labels, annotations or output settings.
OLD_ROW: dict[str, Any] = {
    "clusterId": None,
    "profileId": "7b0e3a4e-0000-4000-8000-000000000001",
    "profileName": "h100-small",
    "profileRevision": 3,
    "templateVersionId": "7b0e3a4e-0000-4000-8000-000000000002",
    "templateName": "gpu-namespace",
    "templateVersion": "1.0.0",
    "templateResources": "apiVersion: v1\nkind: Namespace\n",
    "allocationType": "SHARED",
    "resources": {"cpu": "8", "memory": "64Gi", "storage": "200Gi", "gpuCount": 1, "gpuVendor": "NVIDIA"},
    "inputDefinitions": [{"name": "team", "type": "STRING", "sensitive": False}],
    "inputSettings": [{"name": "team", "value": "ml"}],
    "outputs": [{"name": "namespace", "value": "{{ instance.namespace }}"}],
}


def test_a_row_written_before_the_version_reads_as_version_1() -> None:
    snapshot = Snapshot.from_json(OLD_ROW)
    assert snapshot.allocation_type == AllocationType.SHARED
    assert snapshot.resources == SnapshotResources("8", "64Gi", "200Gi", 1, "NVIDIA", None)
    assert snapshot.labels == () and snapshot.annotations == () and snapshot.output_settings == ()
    written = snapshot.to_json()
    assert written["snapshotVersion"] == 1
    assert {k: v for k, v in written.items() if k in OLD_ROW and k != "resources"} == {
        k: v for k, v in OLD_ROW.items() if k != "resources"
    }
    assert Snapshot.from_json(written) == snapshot


def test_a_newer_version_is_refused_rather_than_misread() -> None:
    with pytest.raises(ValueError, match="snapshot version 2"):
        Snapshot.from_json({**OLD_ROW, "snapshotVersion": 2})


def test_sensitive_inputs() -> None:
    row = {**OLD_ROW, "inputDefinitions": [{"name": "a", "sensitive": True}, {"name": "b"}]}
    assert Snapshot.from_json(row).sensitive_inputs == {"a"}


text = st.text(max_size=12)
pairs = st.lists(st.tuples(text, text), max_size=3).map(tuple)
objects = st.lists(st.fixed_dictionaries({"name": text}), max_size=3).map(tuple)


@given(
    cluster=st.none() | st.uuids().map(str),
    revision=st.integers(min_value=1, max_value=10**6),
    allocation=st.sampled_from(list(AllocationType)),
    gpus=st.integers(min_value=0, max_value=64),
    model=st.none() | text,
    labels=pairs,
    annotations=pairs,
    definitions=objects,
    settings=objects,
)
def test_writing_and_reading_again_changes_nothing(
    cluster: str | None,
    revision: int,
    allocation: AllocationType,
    gpus: int,
    model: str | None,
    labels: tuple[tuple[str, str], ...],
    annotations: tuple[tuple[str, str], ...],
    definitions: tuple[dict[str, Any], ...],
    settings: tuple[dict[str, Any], ...],
) -> None:
    snapshot = Snapshot(
        cluster_id=cluster,
        profile_id="p",
        profile_name="n",
        profile_revision=revision,
        template_version_id="v",
        template_name="t",
        template_version="1.0.0",
        template_resources="x",
        allocation_type=allocation,
        resources=SnapshotResources("1", "1Gi", "1Gi", gpus, "NVIDIA", model),
        input_definitions=definitions,
        input_settings=settings,
        outputs=definitions,
        output_settings=settings,
        labels=labels,
        annotations=annotations,
    )
    assert Snapshot.from_json(snapshot.to_json()) == snapshot
