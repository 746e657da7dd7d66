"""GPUStack's catalog format as pure functions: what export writes, parse reads back the same."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpupaas.instance_templates.gpustack import Template, export_catalog, gpustack_path, parse_catalog
from gpupaas.instance_templates.spec import (
    PROTOCOLS,
    PULL_POLICIES,
    VENDORS,
    Port,
    Resources,
    ServiceSpec,
    SshAccess,
    Storage,
)

text = st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=12) | st.sampled_from(
    ["", "0", "1.0", "true", "null", "~", "- x", "{{generated_token}}", "a: b", "#", "line\nbreak"]
)
names = st.from_regex(r"[a-z]([-a-z0-9]{0,10}[a-z0-9])?", fullmatch=True)


# Labels and numbers that GPUStack's SSH ports have (the import derives SSH access from them), as
# often as any other.
port_labels = text.filter(bool) | st.sampled_from(["SSH", "ssh", "Web SSH", "ssh-2", "JUPYTER"])


@st.composite
def ports(draw: st.DrawFn) -> tuple[Port, ...]:
    labels = draw(st.lists(port_labels, max_size=4, unique_by=str.casefold))
    return tuple(
        Port(
            name=label,
            port=draw(st.integers(1, 65535) | st.just(22)),
            protocol=draw(st.sampled_from(PROTOCOLS)),
            access_params=tuple(draw(st.dictionaries(text, text, max_size=3)).items()),
        )
        for label in labels
    )


storages = st.one_of(
    st.just(Storage()),
    st.builds(Storage, mode=st.just("EPHEMERAL"), size=st.none() | st.sampled_from(["10Gi", "lots"])),
    st.builds(
        Storage,
        mode=st.just("NEW_VOLUME"),
        size=st.none() | st.sampled_from(["50Gi", "1"]),
        reclaim=st.sampled_from(["KEEP", "RELEASE"]),
        claim_name=st.none() | names,
        storage_class=st.none() | st.sampled_from(["standard", "fast-ssd"]),
    ),
    st.builds(Storage, mode=st.just("EXISTING_CLAIM"), claim_name=names),
)
resources = st.builds(
    Resources,
    cpu_request=st.none() | st.sampled_from(["1", "500m", "2"]),
    cpu_limit=st.none() | st.sampled_from(["1", "2", "4"]),
    memory_request=st.none() | st.sampled_from(["1Gi", "8Gi"]),
    memory_limit=st.none() | st.sampled_from(["1Gi", "16Gi"]),
)


@st.composite
def specs(draw: st.DrawFn) -> ServiceSpec:
    spec_ports = draw(ports())
    # SSH access on one of the spec's ports (what the ports would derive, or not), or on a label
    # the spec does not have
    ssh_port = st.sampled_from([p.name for p in spec_ports]) if spec_ports else port_labels
    ssh = st.builds(SshAccess, port=ssh_port | port_labels, user=st.sampled_from(["root", "jovyan", "x y"]))
    return ServiceSpec(
        vendor=draw(st.sampled_from(VENDORS)),
        image=draw(text),
        image_pull_policy=draw(st.sampled_from(PULL_POLICIES)),
        command=tuple(draw(st.lists(text, max_size=4))),
        container_disk=draw(text.filter(bool)),
        mount_path=draw(text.filter(bool)),
        ports=spec_ports,
        env=tuple(draw(st.lists(st.tuples(text, text), max_size=3))),
        gpu_partition=draw(
            st.none() | st.sampled_from(["nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb", "bad"])
        ),
        image_pull_secret=draw(st.none() | names),
        storage=draw(storages),
        resources=draw(resources),
        ssh=draw(st.none() | ssh),
    )


templates = st.builds(
    Template,
    name=names,
    display_name=st.none() | text.filter(bool),
    description=st.none() | text,
    spec=specs(),
)


@settings(max_examples=200, deadline=None)  # a loaded machine is slow, not wrong
@given(st.lists(templates, max_size=4, unique_by=lambda t: t.name))
def test_export_then_parse_gives_the_templates_back(written: list[Template]) -> None:
    entries = parse_catalog(export_catalog(written))
    assert [entry.problems for entry in entries] == [() for _ in written]
    read = [entry.template for entry in entries]
    expected = [
        Template(t.name, t.display_name, t.description or None, t.spec) for t in written
    ]  # an empty description is not written
    assert read == expected


def test_paths_of_the_services_fields_are_the_files() -> None:
    spec = ServiceSpec(
        vendor="CPU", image="x", ports=(Port(name="web", port=80, access_params=(("token", "t"),)),)
    )
    assert gpustack_path(2, ("input", "vendor"), spec) == "items[2].manufacturer"
    assert gpustack_path(2, ("input", "containerDisk"), spec) == "items[2].spec.resources.localStorage"
    assert gpustack_path(2, ("input", "mountPath"), spec) == "items[2].spec.volumeMount"
    assert gpustack_path(2, ("input", "command", "1"), spec) == "items[2].spec.command[1]"
    assert gpustack_path(2, ("input", "env", "0", "key"), spec) == "items[2].spec.env[0].name"
    assert gpustack_path(2, ("input", "env", "0", "value"), spec) == "items[2].spec.env[0].value"
    assert gpustack_path(2, ("input", "ports", "0", "name"), spec) == "items[2].spec.ports[0].name"
    assert (
        gpustack_path(2, ("input", "ports", "0", "accessParams", "0", "value"), spec)
        == "items[2].spec.ports[0].accessParams.token"
    )
    assert gpustack_path(2, None, spec) == "items[2]"
    assert (
        gpustack_path(2, ("input", "gpuPartition"), spec)
        == "items[2].spec.resources.acceleratorPartitionedProfile"
    )
    assert gpustack_path(2, ("input", "imagePullSecret"), spec) == "items[2].spec.imagePullSecret.name"


def test_gpustack_s_volumes_are_read_as_gpustack_writes_them() -> None:
    """GPUStack's GPUInstanceVolume: ephemeral {capacity}, persistent {name} (a volume that exists),
    persistentTemplate {name, spec {type, capacity}, releaseWithInstance} (one made with it)."""
    catalog = """
items:
  - {name: scratch, spec: {image: u, volume: {ephemeral: {capacity: 10Gi}}}}
  - {name: shared, spec: {image: u, volume: {persistent: {name: datasets}}}}
  - name: made
    spec:
      image: u
      volume:
        persistentTemplate: {name: data, spec: {type: nfs, capacity: 20Gi}, releaseWithInstance: false}
  - {name: released, spec: {image: u, volume: {persistentTemplate: {name: tmp}}}}
  - {name: nameless, spec: {image: u, volume: {persistent: {}}}}
  - name: wrong
    spec:
      image: u
      volume: {persistentTemplate: {name: d, spec: {kind: nfs}, releaseWithInstance: "no"}}
"""
    entries = parse_catalog(catalog)
    storages = [entry.template.spec.storage if entry.template else None for entry in entries]
    assert storages[:4] == [
        Storage(mode="EPHEMERAL", size="10Gi"),
        Storage(mode="EXISTING_CLAIM", claim_name="datasets"),
        Storage(mode="NEW_VOLUME", size="20Gi", reclaim="KEEP", claim_name="data", storage_class="nfs"),
        Storage(mode="NEW_VOLUME", reclaim="RELEASE", claim_name="tmp"),
    ]
    assert dict(entries[4].problems) == {"items[4].spec.volume.persistent.name": "is required"}
    wrong = dict(entries[5].problems)
    assert set(wrong) == {
        "items[5].spec.volume.persistentTemplate.spec.kind",
        "items[5].spec.volume.persistentTemplate.releaseWithInstance",
    }
    assert "the fields are type, capacity" in wrong["items[5].spec.volume.persistentTemplate.spec.kind"]
    assert (
        wrong["items[5].spec.volume.persistentTemplate.releaseWithInstance"]
        == "must be true or false, not text"
    )


def test_gpustacks_ssh_port_means_ssh_access_and_x_gpupaas_says_otherwise() -> None:
    text = """
items:
  - name: shell
    spec: {image: ubuntu, command: [tail, -f, /dev/null], ports: [{name: http, port: 80}, {name: SSH, port: 22}]}
  - name: no-command
    spec: {image: ubuntu, ports: [{name: SSH, port: 22}]}
  - name: other-user
    spec: {image: ubuntu, command: [sleep, infinity], ports: [{name: login, port: 2222}]}
    x-gpupaas: {ssh: {port: login, user: jovyan}}
  - name: none
    spec: {image: ubuntu, command: [sleep, infinity], ports: [{name: SSH, port: 22}]}
    x-gpupaas: {ssh: null}
  - name: bad
    spec: {image: ubuntu, command: [sleep, infinity]}
    x-gpupaas: {ssh: {user: root, host: x}}
"""
    shell, no_command, other, none, bad = parse_catalog(text)
    assert shell.template is not None and shell.template.spec.ssh == SshAccess(port="SSH", user="root")
    # without a command there is nothing to start the SSH server beside: no SSH access
    assert no_command.template is not None and no_command.template.spec.ssh is None
    assert other.template is not None and other.template.spec.ssh == SshAccess(port="login", user="jovyan")
    assert none.template is not None and none.template.spec.ssh is None
    assert [field for field, _ in bad.problems] == [
        "items[4].x-gpupaas.ssh.host",
        "items[4].x-gpupaas.ssh.port",
    ]
    # and exporting writes x-gpupaas only where the ports alone would say something else
    read = [entry.template for entry in (shell, no_command, other, none) if entry.template is not None]
    exported = export_catalog(read)
    assert exported.count("x-gpupaas") == 2
    assert [entry.template for entry in parse_catalog(exported)] == read
