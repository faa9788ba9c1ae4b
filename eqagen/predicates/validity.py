"""Validity rules (placeholder: replaced by the full rule set)."""

from __future__ import annotations

from eqagen.core import Program
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.evaluator import RawGroup, evaluate_raw


def content(groups: list[RawGroup], anchor: int | None, yes_no: bool) -> frozenset:
    if anchor is not None:
        groups = [g for g in groups if g.anchor in (anchor, -1)]
    if yes_no:  # "yes" stays "yes" when a filter is dropped: what a filter changes is what grounds it
        return frozenset((g.value, tuple(g.entities.tolist())) for g in groups)
    return frozenset(g.value for g in groups)


def first_violation(ctx: EpisodeContext, program: Program, groups: list[RawGroup], anchor, select) -> str | None:
    named = {f.value for f in program.filters} | {program.query.args.get("subject")}
    if all(g.value in named for g in groups):
        return "trivial_answer"
    from eqagen.predicates.registry import REGISTRY

    yes_no = REGISTRY.query(program.query.name).answer_type(program.query) == "yes/no"
    whole = content(groups, anchor, yes_no)
    for i in range(len(program.filters)):
        dropped = Program(program.filters[:i] + program.filters[i + 1 :], program.query)
        if content(evaluate_raw(ctx, dropped, select), anchor, yes_no) == whole:
            return "ineffective_filter"
    return None
