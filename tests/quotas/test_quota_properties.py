"""Property tests of the quota arithmetic (quotas.service.excess) over random sequences of
deploys and destroys, against a reference written independently: a deploy is refused exactly when
some limited dimension would go past its limit, and what is accepted never exceeds any limit."""

from __future__ import annotations

import uuid
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from gpupaas.quotas.service import GpuLimit, Holding, Limits, excess, lines

PROJECT = uuid.uuid4()
OWNERS = [uuid.uuid4(), uuid.uuid4()]
MODELS = ["A100", "H100", None]
VENDORS = ["NVIDIA", "AMD", "CPU"]


@st.composite
def holdings(draw: st.DrawFn) -> Holding:
    vendor = draw(st.sampled_from(VENDORS))
    return Holding(
        instance_id=uuid.uuid4(),
        instance_name="i",
        project_id=PROJECT,
        owner_id=draw(st.sampled_from(OWNERS)),
        cluster_id=None,
        gpus=0 if vendor == "CPU" else draw(st.integers(0, 8)),
        vendor=vendor,
        model=None if vendor == "CPU" else draw(st.sampled_from(MODELS)),
        cpu=Decimal(draw(st.integers(0, 64))) / 2,
        memory=Decimal(draw(st.integers(0, 16)) * 1024**3),
    )


limits_strategy = st.builds(
    Limits,
    gpus=st.none() | st.integers(0, 24),
    gpu_limits=st.lists(
        st.builds(
            GpuLimit,
            vendor=st.sampled_from(["NVIDIA", "AMD"]),
            model=st.sampled_from(MODELS),
            count=st.integers(0, 16),
        ),
        max_size=3,
        unique_by=lambda g: (g.vendor, g.model),
    ).map(tuple),
    cpu=st.none() | st.integers(0, 64).map(str),
    memory=st.none() | st.integers(0, 64).map(lambda n: f"{n}Gi"),
    instances=st.none() | st.integers(0, 6),
)


def reference_fits(limits: Limits, held: list[Holding], ask: Holding) -> bool:
    """Whether `ask` fits, computed directly from the definition of each dimension."""
    after = [*held, ask]

    def over(used_before: Decimal, used_after: Decimal, limit: Decimal | None) -> bool:
        return limit is not None and used_after > used_before and used_after > limit

    checks = [
        (sum(h.gpus for h in held), sum(h.gpus for h in after), limits.gpus),
        (sum(h.cpu for h in held), sum(h.cpu for h in after), Decimal(limits.cpu) if limits.cpu else None),
        (
            sum(h.memory for h in held),
            sum(h.memory for h in after),
            Decimal(int(limits.memory[:-2]) * 1024**3) if limits.memory else None,
        ),
        (len(held), len(after), limits.instances),
    ]
    for limit in limits.gpu_limits:

        def counted(h: Holding, limit: GpuLimit = limit) -> int:
            same_model = limit.model is None or (h.model or "").lower() == limit.model.lower()
            return h.gpus if h.vendor == limit.vendor and same_model else 0

        checks.append((sum(map(counted, held)), sum(map(counted, after)), limit.count))
    return not any(
        over(Decimal(before), Decimal(after_), None if limit is None else Decimal(limit))
        for before, after_, limit in checks
    )


@settings(max_examples=300, deadline=None)
@given(
    project=limits_strategy,
    member=limits_strategy,
    steps=st.lists(st.tuples(st.booleans(), holdings(), st.integers(0, 50)), max_size=25),
)
def test_deploys_are_refused_exactly_past_a_limit_and_never_exceed_one(
    project: Limits, member: Limits, steps: list[tuple[bool, Holding, int]]
) -> None:
    held: list[Holding] = []
    member_id = OWNERS[0]
    for is_deploy, ask, pick in steps:
        if not is_deploy:
            if held:
                held.pop(pick % len(held))  # a destroy finished: its quota is free again
            continue
        mine = [h for h in held if h.owner_id == member_id]
        refused = excess(project, held, ask) is not None or (
            ask.owner_id == member_id and excess(member, mine, ask) is not None
        )
        expected = reference_fits(project, held, ask) and (
            ask.owner_id != member_id or reference_fits(member, mine, ask)
        )
        assert refused != expected, (project, member, held, ask)
        if not refused:
            held.append(ask)
        # what was accepted stays within every limit, the project's and the member's
        for limits, counted in ((project, held), (member, [h for h in held if h.owner_id == member_id])):
            assert all(line.limit is None or line.used <= line.limit for line in lines(limits, counted))
