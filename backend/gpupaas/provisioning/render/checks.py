"""Everything wrong with an environment-template version when it is added: `check_version`.

Never when a user deploys: a version that passes renders for every set of valid inputs. The
static checks (YAML, object shape, placeholders, input and output definitions) come first; then
the version is rendered with `sample_context` and every object is checked against the Kubernetes
schema (schema.py) and, for a project's own template, against the tenant confinement
(render/policy.py). `sample_context` is also what a preview renders with;
`confinement_check` is what binding a platform template to a CONFINED cluster checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpupaas.provisioning.inputs import (
    INPUT_NAME_RULE,
    InputDefinition,
    check_definition,
    check_value,
    format_number,
    is_valid_name,
    typed_value,
)
from gpupaas.provisioning.render.parse import load
from gpupaas.provisioning.render.placeholders import expression_problem, placeholders_in
from gpupaas.provisioning.render.policy import (
    TemplateScope,
    confinement_problems,
    label_problems,
    quota_problems,
)
from gpupaas.provisioning.render.problems import Problem, TemplateError, object_ref
from gpupaas.provisioning.render.rendering import OutputDefinition, RenderContext, render, render_documents
from gpupaas.provisioning.render.schema import manifest_problems

__all__ = ["check_version", "confinement_check", "sample_context"]


_SAMPLE_STRINGS = ("sample", "sample-1", "a", "1", "A", "a1", "v1", "1.0.0", "sample@example.com")


def _sample_input(defn: InputDefinition) -> tuple[str, bool]:
    """A value for a trial render, and whether it satisfies the input's rules.

    The default if it is valid, else the first valid option, else a value of the type within the
    bounds. A pattern may match none of the few strings tried: the value then still has the
    right type, and check_version ignores what the schema says about the fields it lands in.
    """
    candidates = [defn.default] if defn.default is not None else []
    candidates.extend(defn.options)
    if defn.type == "NUMBER":
        low = defn.min if defn.min is not None else (min(1.0, defn.max) if defn.max is not None else 1.0)
        candidates.extend([format_number(low), "1"])
    elif defn.type == "BOOLEAN":
        candidates.extend(["true", "false"])
    elif defn.type == "QUANTITY":
        candidates.append("1")
    else:
        candidates.extend(_SAMPLE_STRINGS)
    for candidate in candidates:
        if check_value(defn, candidate) is None:
            return candidate, True
    fallback = {"NUMBER": "1", "BOOLEAN": "true", "QUANTITY": "1"}.get(defn.type, "sample")
    return fallback, False


def sample_context(inputs: Sequence[InputDefinition] = ()) -> RenderContext:
    """The context of a trial render (check_version), or of a preview.

    Sample instance, profile and resources (one NVIDIA GPU), and for every input a value that
    satisfies its definition when one of a few tried does.
    """
    values: dict[str, str | int | float | bool] = {}
    for defn in inputs:
        if defn.name in values:  # a duplicate, reported by check_version: the first one counts
            continue
        value, _ = _sample_input(defn)
        try:
            values[defn.name] = typed_value(defn, value)
        except ValueError:  # an input whose type is unknown: check_definition reports it
            values[defn.name] = value
    return RenderContext(
        inputs=values,
        instance_name="sample",
        instance_namespace="gpupaas-sample",
        instance_id="00000000-0000-0000-0000-000000000000",
        profile_name="sample-profile",
        cpu="4",
        memory="16Gi",
        storage="100Gi",
        gpu_count=1,
        gpu_vendor="NVIDIA",
        gpu_model="H100",
        gpu_resource_name="nvidia.com/gpu",
        generated_token="sample-token",
    )


def _definition_problems(
    inputs: Sequence[InputDefinition], outputs: Sequence[OutputDefinition], kinds: Sequence[str] | None
) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[str] = set()
    for index, defn in enumerate(inputs):
        problems.extend(
            Problem(message, path=(index, part), field="inputs") for part, message in check_definition(defn)
        )
        if defn.name in seen:
            problems.append(
                Problem(
                    f'input name "{defn.name}" is used more than once', path=(index, "name"), field="inputs"
                )
            )
        seen.add(defn.name)
    input_names = [defn.name for defn in inputs]
    seen = set()
    for index, output in enumerate(outputs):
        if not is_valid_name(output.name):
            problems.append(
                Problem(
                    f"output name {output.name!r} {INPUT_NAME_RULE}", path=(index, "name"), field="outputs"
                )
            )
        if output.name in seen:
            problems.append(
                Problem(
                    f'output name "{output.name}" is used more than once',
                    path=(index, "name"),
                    field="outputs",
                )
            )
        seen.add(output.name)
        for _, expression in placeholders_in(output.value):
            message = expression_problem(expression, input_names, kinds, in_output=True)
            if message is not None:
                problems.append(Problem(message, path=(index, "value"), field="outputs"))
    return problems


def check_version(
    resources: str,
    inputs: Sequence[InputDefinition],
    outputs: Sequence[OutputDefinition],
    *,
    scope: TemplateScope = TemplateScope.PROJECT,
    kubernetes_version: str = "1.37.0",
) -> list[Problem]:
    """Everything wrong with a template version; an empty list when it may be added.

    After the static checks (YAML, object shape, variables, definitions), the version is rendered
    with `sample_context(inputs)` and every object is checked by `validate_manifest` (so a
    `kubernetes_version` kubernetes-validate has no schemas for raises ValueError). When no
    sample satisfies a STRING input's pattern, a plain string stands in for it and problems the
    schema reports at the fields that string lands in are not reported (their type still is):
    they would be about the stand-in, not about the template. A PROJECT template's rendered
    objects must also keep to the tenant confinement (policy.confinement_problems: its kinds,
    namespaces, RBAC and pod settings); a PLATFORM template's are checked when a profile binds it
    to a cluster (`confinement_check`), since whether they may go further depends on the cluster.
    """
    documents, problems = load(resources)
    parsed = not (problems and problems[0].document is None)
    # Without the YAML, the kinds are unknown and objects.<Kind> in outputs cannot be checked.
    kinds = [doc["kind"] for doc in documents if isinstance(doc, dict) and isinstance(doc.get("kind"), str)]
    input_names = [defn.name for defn in inputs]
    for index, document in enumerate(documents):
        ref = object_ref(document) if isinstance(document, dict) else None
        for path, expression in placeholders_in(document):
            message = expression_problem(expression, input_names, kinds, in_output=False)
            if message is not None:
                problems.append(Problem(message, index, path, object_ref=ref))
    problems.extend(_definition_problems(inputs, outputs, kinds if parsed else None))
    if any(problem.field == "resources" for problem in problems):
        return problems
    problems.extend(_trial_render(documents, inputs, kubernetes_version, scope))
    return problems


def _trial_render(
    documents: Sequence[Mapping[str, Any]],
    inputs: Sequence[InputDefinition],
    kubernetes_version: str,
    scope: TemplateScope,
) -> list[Problem]:
    context = sample_context(inputs)
    first = {defn.name: defn for defn in reversed(inputs)}.values()
    untrusted = frozenset(f"inputs.{defn.name}" for defn in first if not _sample_input(defn)[1])
    rendered, problems, untrusted_paths = render_documents(documents, context.variables(), untrusted)
    if problems:
        return problems
    for index, (manifest, skip) in enumerate(zip(rendered, untrusted_paths, strict=True)):
        ref = object_ref(documents[index])
        for path, message, keyword in manifest_problems(manifest, kubernetes_version):
            if path in skip and keyword != "type":
                continue
            problems.append(Problem(message, index, path, object_ref=ref))
    # Named as the template writes them ("Namespace {{ instance.namespace }}"), not as rendered.
    refs = [object_ref(document) for document in documents]
    problems.extend(label_problems(rendered, refs))
    if scope == TemplateScope.PROJECT:
        problems.extend(confinement_problems(rendered, context.instance_namespace, refs))
    return problems


def confinement_check(
    resources: str, inputs: Sequence[InputDefinition], context: RenderContext | None = None
) -> list[Problem]:
    """What in a stored version breaks the tenant confinement, rendered with `context` (by default
    `sample_context(inputs)`; a profile's check passes its own resources in it): its kinds,
    namespaces, RBAC and pod settings, and quotas above the context's resources. A version that
    does not render reports why (it could not have been stored through check_version)."""
    context = context or sample_context(inputs)
    try:
        rendered = render(resources, context)
    except TemplateError as error:
        return error.problems
    return confinement_problems(rendered, context.instance_namespace) + quota_problems(
        rendered,
        cpu=context.cpu,
        memory=context.memory,
        storage=context.storage,
        gpu_count=context.gpu_count,
        gpu_resource_name=context.gpu_resource_name,
    )
