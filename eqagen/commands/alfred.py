"""``eqagen alfred``: replay ALFRED expert trajectories, run FILM mode, index a data root.

- ``eqagen alfred replay ROOT --out DIR [--layouts DIR]``: every trajectory with a plan under ROOT;
  writes ``DIR/episodes/*.parquet``, ``DIR/fidelity.json`` (one entry per trajectory: ``trajectory``
  relative to ROOT, ``task_type``, ``actions_ok``, ``goal_ok``, ``reason``) and
  ``DIR/fidelity_summary.json`` (per task type).
- ``eqagen alfred film ROOT --out DIR [--parses FILE] [--catalog DIR] [--every-annotation]``: FILM mode
  on every trajectory (its first instruction, or each one); writes episodes and ``DIR/film_stats.json``.
- ``eqagen alfred index ROOT --out DIR [--layouts DIR]``: the scene catalog (one JSON per floor plan).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from eqagen.core import DataFileError, Episode
from eqagen.core.limits import MAX_STEPS, bounded_int

DEFAULT_OUT_INDEX = "alfred-catalog"
ROWS_PER_SHARD = 100


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("alfred", help="ALFRED on the real AI2-THOR floor plans: replay, FILM mode, index")
    sub = p.add_subparsers(dest="alfred_command", required=True)
    r = sub.add_parser("replay", help="replay every expert trajectory under ROOT; writes episodes and fidelity.json")
    _common(r)
    r.add_argument("--limit", type=bounded_int(1, None), help="replay at most this many trajectories")
    r.set_defaults(func=run_replay)
    f = sub.add_parser("film", help="FILM mode: the FILM-like agent on FILM's parse of each instruction")
    _common(f)
    f.add_argument("--parses", type=Path, help="FILM parse JSON (default: by split under $EQAGEN_REALDATA/film)")
    f.add_argument("--catalog", type=Path, help="scene catalog directory (default: index ROOT's parent on the fly)")
    f.add_argument("--max-steps", type=bounded_int(1, MAX_STEPS), default=250,
                   help=f"step limit of one episode, 1 to {MAX_STEPS:,} (default 250, as FILM)")  # fmt: skip
    f.add_argument("--limit", type=bounded_int(1, None), help="run at most this many trajectories")
    f.add_argument("--every-annotation", action="store_true",
                   help="each instruction of a trajectory, as FILM's evaluation (default: the first)")  # fmt: skip
    f.set_defaults(func=run_film)
    i = sub.add_parser("index", help="stream over ROOT and write a scene catalog per floor plan")
    i.add_argument("root", type=Path, help="a directory holding traj_data.json files (any depth)")
    i.add_argument("--out", type=Path, default=Path(DEFAULT_OUT_INDEX),
                   help=f"the catalog directory to write (default {DEFAULT_OUT_INDEX})")  # fmt: skip
    i.add_argument("--layouts", type=Path, help="ALFRED layouts directory (for coverage); optional")
    i.set_defaults(func=run_index)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("root", type=Path, help="a directory holding traj_data.json files (any depth)")
    p.add_argument("--out", type=Path, required=True, help="the directory to write episodes and statistics to")
    p.add_argument("--layouts", type=Path, help="ALFRED layouts (default: $EQAGEN_REALDATA/alfred/layouts)")
    p.add_argument("--seed", type=int, default=0, help="seed of the episodes (default 0)")


def _write_json(data: object, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


class EpisodeShardWriter:
    """Buffers episodes and writes ``episodes/part-NNNNN.parquet`` every ``rows_per_shard`` episodes."""

    def __init__(self, out_dir: Path, rows_per_shard: int = ROWS_PER_SHARD):
        self.out_dir, self.rows_per_shard = Path(out_dir), rows_per_shard
        self.buffer: list[Episode] = []
        self.n_shards = 0
        self.n_rows = 0

    def add(self, episode: Episode) -> None:
        self.buffer.append(episode)
        if len(self.buffer) >= self.rows_per_shard:
            self.flush()

    def flush(self) -> None:
        if not self.buffer:
            return
        # pyarrow only when a command writes (the CLI imports this module to register it)
        from eqagen.outputs.schemas import episodes_table
        from eqagen.outputs.shards import sort_rows, write_parquet_atomic

        table = sort_rows(episodes_table(self.buffer), "episode_id")
        write_parquet_atomic(table, self.out_dir / "episodes" / f"part-{self.n_shards:05d}.parquet")
        self.n_shards += 1
        self.n_rows += len(self.buffer)
        self.buffer = []


def run_replay(args: argparse.Namespace) -> int:
    from eqagen.generators.household.alfred.reader import find_layouts_dir
    from eqagen.generators.household.alfred.runs import fidelity_summary, replay_root

    layouts = find_layouts_dir(args.layouts)
    writer, entries = EpisodeShardWriter(args.out), []
    for episode, fid in replay_root(args.root, layouts, args.limit, args.seed):
        writer.add(episode)
        entries.append(fid)
    writer.flush()
    _write_json([e.to_dict() for e in entries], args.out / "fidelity.json")
    summary = fidelity_summary(entries)
    _write_json(summary, args.out / "fidelity_summary.json")
    _print_fidelity(summary, entries)
    return 0


def _print_fidelity(summary: dict, entries: list) -> None:
    print(f"{'task type':36s} {'n':>4s} {'actions ok':>11s} {'goal ok':>9s}")
    for k, s in summary.items():
        print(f"{k:36s} {s['n']:4d} {s['actions_ok_rate']:11.1%} {s['goal_ok_rate']:9.1%}")
    for e in entries:
        if e.reason:
            print(f"FAIL {e.trajectory}: {e.reason}")


def _default_parses(root: Path) -> Path:
    from eqagen.generators.household.alfred.film import FILM_FILES

    env = os.environ.get("EQAGEN_REALDATA")
    split = next((s for s in FILM_FILES if s in root.parts), "tests_seen")
    if not env:
        raise DataFileError("$EQAGEN_REALDATA", "film", "no FILM parse file given", "pass --parses FILE")
    return Path(env) / "film" / FILM_FILES[split]


def _scene_catalog(args: argparse.Namespace, layouts: Path):
    from eqagen.generators.household.alfred.catalog import SceneCatalog, build_catalog

    if args.catalog is not None:
        return SceneCatalog.read(args.catalog)
    # Index the whole data root the split belongs to (its siblings show more of each floor plan).
    return SceneCatalog(build_catalog(args.root.parent if args.root.is_dir() else args.root, layouts))


def run_film(args: argparse.Namespace) -> int:
    from eqagen.generators.household.alfred.film import read_film_parses
    from eqagen.generators.household.alfred.reader import find_layouts_dir
    from eqagen.generators.household.alfred.runs import film_root, film_stats

    layouts = find_layouts_dir(args.layouts)
    parses = read_film_parses(args.parses or _default_parses(args.root))
    writer, metas, errors = EpisodeShardWriter(args.out), [], []
    for rel, episode, error in film_root(args.root, layouts, parses, _scene_catalog(args, layouts), args.seed,
                                         args.max_steps, args.limit, args.every_annotation):  # fmt: skip
        if episode is None:
            errors.append({"trajectory": rel, "error": error})
            continue
        writer.add(episode)
        metas.append(episode.meta | {"n_steps": episode.n_steps})
    writer.flush()
    stats = film_stats(metas, len(errors)) | {"error_list": errors}
    _write_json(stats, args.out / "film_stats.json")
    print(json.dumps({k: v for k, v in stats.items() if k != "error_list"}, indent=1))
    return 0


def run_index(args: argparse.Namespace) -> int:
    from eqagen.generators.household.alfred.catalog import build_catalog, write_catalog

    layouts = args.layouts
    if layouts is None and os.environ.get("EQAGEN_REALDATA"):
        candidate = Path(os.environ["EQAGEN_REALDATA"]) / "alfred" / "layouts"
        layouts = candidate if candidate.is_dir() else None
    entries = build_catalog(args.root, layouts)
    index = write_catalog(entries, args.out, str(args.root))
    n = sum(e["n_trajectories"] for e in entries.values())
    print(f"indexed {n} trajectories over {len(entries)} floor plans -> {index}")
    return 0
