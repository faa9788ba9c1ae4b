"""The ``eqagen`` command.

``eqagen generate PRESET_OR_CONFIG --out DIR [--seed N] [--set key=value ...] [--runner KIND]``,
``eqagen presets`` and ``eqagen --version`` live here; other parts add their subcommands by putting
their module in :data:`SUBCOMMAND_MODULES` (each exposes ``register(subparsers)``). Every listed module
ships with the package, so a failing import is a bug and is raised, never skipped.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from eqagen.core import EqagenError

SUBCOMMAND_MODULES = [
    "eqagen.curation.audit_cli",
    "eqagen.curation.cli",
    "eqagen.paraphrase.cli",
    "eqagen.generators.household.alfred.cli",
    "eqagen.generators.blockworld.cli",
]


def _version() -> str:
    try:
        return metadata.version("eqagen")
    except metadata.PackageNotFoundError:
        return "unknown"


def register_generate(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("generate", help="generate a dataset from a preset or a YAML config")
    p.add_argument("config", help="a preset name (see `eqagen presets`) or a path to a YAML config")
    p.add_argument("--out", type=Path, required=True,
                   help="output directory (created; a rerun of the same config resumes; a folder holding another "
                   "config's dataset or files eqagen did not write is refused)")  # fmt: skip
    p.add_argument("--overwrite", action="store_true",
                   help="replace a dataset in --out made with another config (only the files its manifest "
                   "lists; files eqagen did not write are never removed)")  # fmt: skip
    p.add_argument("--seed", type=int, help="override the config's seed")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, e.g. --set generation.n_episodes=100 (repeatable)")  # fmt: skip
    p.add_argument("--runner", choices=["local", "processes", "dask", "inline"],
                   help="local: Prefect, thread pool; processes: Prefect, process pool; dask: Prefect on Dask; "
                   "inline: plain Python without Prefect")  # fmt: skip
    p.add_argument("--workers", type=int, help="parallel workers of the task runner")
    p.add_argument("--address", help="Dask scheduler address (with --runner dask)")
    p.add_argument("--api-host", help="this machine's address for the run's Prefect API, reachable by every "
                   "worker (default: 127.0.0.1, or the address on the route to a remote --address)")  # fmt: skip
    p.add_argument("--fresh", action="store_true",
                   help="discard the checkpoints of an earlier run (and Prefect's database) first")  # fmt: skip
    p.add_argument("--clean", action="store_true",
                   help="remove the checkpoints (OUT/.eqagen) after a successful run")  # fmt: skip
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--summary-json", type=Path, help="also write the run summary (counts, seconds per stage) here")
    p.set_defaults(func=run_generate)


def register_presets(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("presets", help="list the presets and what each makes")
    p.add_argument("name", nargs="?", help="show one preset's full YAML")
    p.set_defaults(func=run_presets)


def run_presets(args: argparse.Namespace) -> int:
    from eqagen.config import preset_names, read_preset, resolved, validate_config

    if args.name:
        from importlib import resources

        print((resources.files("eqagen") / "presets" / f"{args.name.removesuffix('.yaml')}.yaml").read_text(), end="")
        return 0
    for name in preset_names():
        config = validate_config(read_preset(name), f"preset {name}")
        g = resolved(config)["generation"]
        print(f"{name:16s} {config.description}")
        print(f"{'':16s} {g['family']}/{g['backend']}, {g['n_episodes']} episodes, <= {g['max_steps']} steps")
    return 0


def _config_overrides(args: argparse.Namespace) -> list[str]:
    extra = list(args.overrides)
    if args.runner:
        extra.append(f"runner.kind={args.runner}")
    if args.workers:
        extra.append(f"runner.workers={args.workers}")
    if args.address:
        extra.append(f"runner.address={args.address}")
    if args.api_host:
        extra.append(f"runner.api_host={args.api_host}")
    if args.no_progress:
        extra.append("runner.progress=false")
    return extra


def run_generate(args: argparse.Namespace) -> int:
    from eqagen.config import config_hash, load_config
    from eqagen.flows.checkpoints import remove_run_state, run_state_bytes
    from eqagen.flows.pipeline import count_batches
    from eqagen.flows.progress import BatchProgress, print_summary
    from eqagen.outputs.folder import claim_output

    config = load_config(args.config, _config_overrides(args), seed=args.seed)
    out_dir = args.out.resolve()
    with claim_output(out_dir, config_hash(config), overwrite=args.overwrite, command=f"generate {args.config}"):
        if args.fresh:
            remove_run_state(out_dir)
        done, n_batches = count_batches(config, out_dir)
        if done:
            print(f"resuming: {done} of {n_batches} batches done (checkpoints in {out_dir}/.eqagen)", file=sys.stderr)
        start = time.perf_counter()
        with BatchProgress(n_batches, completed=done, enabled=config.runner.progress) as progress:
            summary = _run(config, out_dir, progress.advance)
        if args.clean:
            remove_run_state(out_dir)
    print_summary(summary, config, time.perf_counter() - start, run_state_bytes(out_dir))
    if args.summary_json:
        from eqagen.outputs.manifest import write_json_atomic

        write_json_atomic(summary.to_dict(), args.summary_json)
    return 0


def _run(config: Any, out_dir: Path, on_batch: Any) -> Any:
    if config.runner.kind == "inline":
        from eqagen.flows.pipeline import generate_inline

        return generate_inline(config, out_dir, on_batch=on_batch)
    from eqagen.flows.server import LocalPrefectServer, api_host, apply_prefect_environment, free_port, sigterm_as_exit
    from eqagen.outputs.folder import state_dir

    started = time.perf_counter()
    host = api_host(config.runner)  # 127.0.0.1 unless workers on other machines must reach the API
    home, port = state_dir(out_dir) / "prefect", free_port(host)
    apply_prefect_environment(home, port, host)  # before prefect is imported
    server = LocalPrefectServer(home, port, host=host)
    with sigterm_as_exit():
        try:
            server.launch()  # the server boots while this process imports Prefect and the stages
            from eqagen.flows.generate import run_with_prefect
            from eqagen.flows.stages import warm_imports

            warm_imports(config)
            return run_with_prefect(config, out_dir, home, on_batch, server=server, started_at=started)
        finally:
            server.stop()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="eqagen", description="Synthetic embodied-question-answering datasets.")
    parser.add_argument("--version", action="version", version=f"eqagen {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    register_generate(subparsers)
    register_presets(subparsers)
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except EqagenError as err:
        print(f"eqagen: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("eqagen: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    except OSError as err:  # a full disk, a read-only or vanished output directory
        print(f"eqagen: error: {os_error_text(err)}", file=sys.stderr)
        return 2


# What to do about the operating system's refusals to write.
OS_ERROR_FIXES = {
    errno.ENOSPC: "free some space or choose another --out; finished batches are kept, so rerunning resumes",
    errno.EDQUOT: "free some space or choose another --out; finished batches are kept, so rerunning resumes",
    errno.EROFS: "the output directory is on a read-only file system: choose another --out",
    errno.EACCES: "the output directory is not writable: fix its permissions or choose another --out",
    errno.EPERM: "the output directory is not writable: fix its permissions or choose another --out",
}


def os_error_text(err: OSError) -> str:
    where = err.filename or "the output directory"
    what = err.strerror or str(err)
    fix = OS_ERROR_FIXES.get(err.errno or 0)
    if fix is None and "No space left" in str(err):  # pyarrow reports the errno only in its text
        fix = OS_ERROR_FIXES[errno.ENOSPC]
    return f"cannot write {where}: {what}" + (f"; fix: {fix}" if fix else "")


if __name__ == "__main__":
    sys.exit(main())
