"""Whole-root runs: expert replay and FILM mode over every trajectory of a data root, and their summaries.

Both stream: one trajectory is read, run and handed on at a time; layouts are cached per floor plan.
The ``eqagen alfred`` command writes the episodes they yield (:mod:`eqagen.commands.alfred`).
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from eqagen.core import Episode, TaskError
from eqagen.generators.household.alfred.catalog import SceneCatalog
from eqagen.generators.household.alfred.failures import FAILURE_MODES
from eqagen.generators.household.alfred.film import FilmParse, lookup_parse
from eqagen.generators.household.alfred.film_run import annotation_consensus, run_film_episode
from eqagen.generators.household.alfred.reader import Layout, iter_trajectory_paths, read_trajectory
from eqagen.generators.household.alfred.replay import Fidelity, load_layout_cached, replay_trajectory


def _relpath(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if root.is_dir() else path.name


def replay_root(
    root: str | os.PathLike[str], layouts_dir: Path, limit: int | None = None, seed: int = 0
) -> Iterator[tuple[Episode, Fidelity]]:
    """Replay every trajectory with an expert plan under ``root`` (sorted order)."""
    root, layouts = Path(root), {}
    n = 0
    for path in iter_trajectory_paths(root):
        if limit is not None and n >= limit:
            return
        traj = read_trajectory(path)
        if not traj.has_plan:
            continue
        n += 1
        yield replay_trajectory(
            traj, load_layout_cached(layouts, traj.floor_plan, layouts_dir), _relpath(path, root), seed
        )


def fidelity_summary(entries: Iterable[Fidelity]) -> dict[str, Any]:
    """Per task type and overall: trajectories, every-action-succeeded and goal-reached counts and rates."""
    groups: dict[str, list[Fidelity]] = defaultdict(list)
    for e in entries:
        groups[e.task_type].append(e)
        groups["all"].append(e)

    def rates(es: list[Fidelity]) -> dict[str, Any]:
        n = len(es)
        ok, goal = sum(e.actions_ok for e in es), sum(e.goal_ok for e in es)
        return {"n": n, "actions_ok": ok, "goal_ok": goal, "actions_ok_rate": round(ok / max(n, 1), 4),
                "goal_ok_rate": round(goal / max(n, 1), 4)}  # fmt: skip

    return {k: rates(v) for k, v in sorted(groups.items())}


def film_root(
    root: str | os.PathLike[str],
    layouts_dir: Path,
    parses: dict[str, FilmParse],
    scene_catalog: SceneCatalog | None,
    seed: int = 0,
    max_steps: int = 250,
    limit: int | None = None,
    every_annotation: bool = False,
) -> Iterator[tuple[str, Episode | None, str]]:
    """FILM mode on every trajectory (its first annotation, or each one as FILM's evaluation does):
    (trajectory, episode or None, error text) per run; ``limit`` counts trajectories."""
    root, layouts = Path(root), {}
    for k, path in enumerate(iter_trajectory_paths(root)):
        if limit is not None and k >= limit:
            return
        rel = _relpath(path, root)
        traj = read_trajectory(path)
        consensus = annotation_consensus(traj, parses)
        for repeat_idx in range(max(len(traj.annotations), 1) if every_annotation else 1):
            parse = lookup_parse(parses, traj.instruction(repeat_idx))
            if parse is None:
                yield rel, None, f"no FILM parse for annotation {repeat_idx}"
                continue
            layout: Layout = load_layout_cached(layouts, traj.floor_plan, layouts_dir)
            try:
                ep = run_film_episode(traj, layout, parse, rel, seed, scene_catalog, max_steps, repeat_idx, consensus)
                yield rel, ep, ""
            except (TaskError, ValueError) as exc:  # a scene the agent cannot start in: counted, not fatal
                yield rel, None, f"{type(exc).__name__}: {exc}"


def _rate(k: int, n: int) -> float:
    return round(k / max(n, 1), 4)


def film_stats(metas: list[dict[str, Any]], errors: int = 0) -> dict[str, Any]:
    """FILM-mode numbers: task success (as FILM's evaluation counts it), the parsed goal reached, failure
    modes as shares of the failed episodes (FILM's error table), loops and search revisits, parse accuracy
    and true-goal success where the task is known."""
    n = len(metas)
    judged = [m for m in metas if m.get("parse_matches_task") is not None]
    failed = [m for m in metas if not m["success"]]
    modes = Counter(m["failure_mode"] for m in failed)
    return {
        "episodes_run": n,
        "errors": errors,
        "task_success_rate": _rate(sum(m["success"] for m in metas), n),
        "failure_rate": _rate(len(failed), n),
        "parsed_goal_rate": _rate(sum(m["parsed_goal_ok"] for m in metas), n),
        "parse_with_majority_rate": _rate(sum(m["parse_with_majority"] for m in metas), n),
        "failure_modes": {k: modes.get(k, 0) for k in FAILURE_MODES},
        "failure_mode_shares": {k: _rate(modes.get(k, 0), len(failed)) for k in FAILURE_MODES},
        "episodes_with_loops": sum(m["loops"] > 0 for m in metas),
        "episodes_with_search_revisits": sum(m["search_revisits"] > 0 for m in metas),
        "mean_search_revisits": round(sum(m["search_revisits"] for m in metas) / max(n, 1), 2),
        "episodes_with_collisions": sum(m["collisions"] > 0 for m in metas),
        "stop_reasons": dict(sorted(Counter(m["stop_reason"] for m in metas).items())),
        "mean_steps": round(sum(m.get("n_steps", 0) for m in metas) / max(n, 1), 1),
        "parse_accuracy": _rate(sum(m["parse_matches_task"] for m in judged), len(judged)) if judged else None,
        "true_goal_success_rate": _rate(sum(bool(m["true_goal_ok"]) for m in judged), len(judged)) if judged else None,
    }
