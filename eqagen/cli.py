"""The ``eqagen`` command.

``eqagen generate PRESET_OR_CONFIG --out DIR [--seed N] [--set key=value ...] [--runner KIND]``,
``eqagen presets`` and ``eqagen --version`` live here; other parts add their subcommands by putting
their module in :data:`SUBCOMMAND_MODULES` (each exposes ``register(subparsers)``). Every listed module
ships with the package, so a failing import is a bug and is raised, never skipped.

Every command ends in one of :data:`EXIT_STATUSES`. A failure is one line on standard error, first
and alone: ``eqagen: error: <file or key>: <problem>; fix: <what to do>``, followed by the path of the
log that holds the details when there is one (``generate`` keeps Prefect's and Dask's output in
``OUT/.eqagen/logs/``, see :mod:`eqagen.flows.runlog`).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import importlib
import os
import signal
import sys
import tempfile
import textwrap
import time
import traceback
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from eqagen.core import EqagenError
from eqagen.core.limits import MAX_WORKERS, available_cpus, bounded_int

if TYPE_CHECKING:
    from eqagen.config import PipelineConfig
    from eqagen.flows.runlog import RunLog

# The exit statuses of every command (also in `eqagen --help` and docs/pipeline.md).
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_BROKEN_PIPE, EXIT_TERMINATED = 128 + signal.SIGPIPE, 128 + signal.SIGTERM
EXIT_STATUSES = {
    EXIT_OK: "done",
    EXIT_FAILED: "a check failed, or the command could not do what was asked (no question survived, an "
    "internal error); the line says why",
    EXIT_BAD_INPUT: "bad input: a config, file or argument is wrong; the line names it and the fix",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C); `generate`, `paraphrase` and `resplit` resume when run again",
    EXIT_BROKEN_PIPE: "the reader of the output went away (`eqagen ... | head`); nothing is said",
    EXIT_TERMINATED: "terminated (SIGTERM); workers are stopped, `generate` resumes when run again",
}
EPILOG = "exit statuses:\n" + "\n".join(
    textwrap.fill(text, 96, initial_indent=f"  {code:<5}", subsequent_indent=" " * 7)
    for code, text in EXIT_STATUSES.items()
)

SUBCOMMAND_MODULES = [
    "eqagen.commands.audit",
    "eqagen.commands.resplit",
    "eqagen.commands.paraphrase",
    "eqagen.commands.alfred",
    "eqagen.commands.blockworld",
    "eqagen.commands.score",
    "eqagen.commands.show",
    "eqagen.commands.baseline",
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
                   help="local: Prefect, threads; processes: Prefect, forked worker processes; dask: Prefect, a Dask "
                   "cluster's workers; "
                   "inline: plain Python without Prefect")  # fmt: skip
    p.add_argument("--workers", type=bounded_int(1, MAX_WORKERS),
                   help="parallel workers of the task runner (at most the CPUs this process may use: more are "
                   "reduced to that, with a note)")  # fmt: skip
    p.add_argument("--address", help="Dask scheduler address (with --runner dask)")
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
    from eqagen.config import preset_names, preset_text, read_preset, resolved, validate_config

    if args.name:
        print(preset_text(args.name), end="")
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
    if args.no_progress:
        extra.append("runner.progress=false")
    return extra


def run_generate(args: argparse.Namespace) -> int:
    from eqagen.config import config_hash, load_config
    from eqagen.flows.checkpoints import remove_run_state, run_state_bytes
    from eqagen.flows.pipeline import count_batches
    from eqagen.flows.progress import BatchProgress, print_summary
    from eqagen.flows.runlog import run_log
    from eqagen.outputs.folder import claim_output, refuse_inside_inputs

    config = with_usable_workers(load_config(args.config, _config_overrides(args), seed=args.seed))
    out_dir = args.out.resolve()
    refuse_inside_inputs(args.summary_json, [out_dir], "--summary-json")  # a file of its own in the dataset
    if config.runner.kind != "inline":  # Prefect's database: a path SQLite can open, before anything is written
        from eqagen.flows.server import database_url
        from eqagen.outputs.folder import state_dir

        database_url(state_dir(out_dir) / "prefect" / "prefect.db")
    with claim_output(out_dir, config_hash(config), overwrite=args.overwrite, command=f"generate {args.config}"):
        if args.fresh:
            remove_run_state(out_dir)
        done, n_batches = count_batches(config, out_dir)
        if done:
            print(f"resuming: {done} of {n_batches} batches done (checkpoints in {out_dir}/.eqagen)", file=sys.stderr)
        start = time.perf_counter()
        with (
            run_log(out_dir) as log,
            BatchProgress(n_batches, done, config.runner.progress, log.console) as progress,
        ):
            summary = _run(config, out_dir, progress.advance, log, progress.stage)
        if args.clean:
            remove_run_state(out_dir)
    print_summary(summary, config, time.perf_counter() - start, run_state_bytes(out_dir))
    if args.summary_json:
        from eqagen.outputs.manifest import write_json_atomic

        write_json_atomic(summary.to_dict(), args.summary_json)
    return 0


def with_usable_workers(config: PipelineConfig) -> PipelineConfig:
    """``config`` with ``runner.workers`` reduced to the CPUs this process may use, saying so, where the run
    starts its workers itself (an existing Dask cluster brings its own)."""
    usable = available_cpus()
    runner = config.runner
    if runner.workers <= usable or (runner.kind == "dask" and runner.address):
        return config
    print(f"eqagen: note: {runner.workers} workers asked for, but this process may use {usable} CPUs; "
          f"using {usable}", file=sys.stderr)  # fmt: skip
    return config.model_copy(update={"runner": runner.model_copy(update={"workers": usable})})


def _run(config: PipelineConfig, out_dir: Path, on_batch: Any, log: RunLog, on_stage: Any = None) -> Any:
    if config.runner.kind == "inline":
        from eqagen.flows.pipeline import generate_inline

        return generate_inline(config, out_dir, on_batch=on_batch, on_stage=on_stage)
    from eqagen.flows.server import LocalPrefectServer, apply_prefect_environment, free_port
    from eqagen.flows.signals import signals_as_exceptions
    from eqagen.outputs.folder import state_dir

    started = time.perf_counter()
    home, port = state_dir(out_dir) / "prefect", free_port()
    apply_prefect_environment(home, port)  # before prefect is imported
    server = LocalPrefectServer(home, port, notify=log.note, fail=log.error)
    with signals_as_exceptions():
        try:
            server.launch()  # the server boots while this process imports Prefect and the stages
            from eqagen.flows.run import run_with_prefect
            from eqagen.flows.stages import warm_imports

            warm_imports(config)
            return run_with_prefect(
                config, out_dir, home, on_batch, server=server, started_at=started, on_stage=on_stage
            )
        finally:
            server.stop()


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose usage errors are one line, first and alone (the usage is one --help away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}; see `{self.prog} --help`\n")


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="eqagen",
        description="Synthetic embodied-question-answering datasets.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"eqagen {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    register_generate(subparsers)
    register_presets(subparsers)
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit status (:data:`EXIT_STATUSES`)."""
    from eqagen.flows.signals import signals_as_exceptions

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    resumes = "; run the same command again to resume" if args.command in ("generate", "paraphrase", "resplit") else ""
    try:
        with signals_as_exceptions():
            status = int(args.func(args) or 0)
            sys.stdout.flush()  # here, where a closed pipe is caught, not at exit
            return status
    except EqagenError as err:
        return say_error(err.exit_status, str(err), err)
    except KeyboardInterrupt as err:
        return say_error(EXIT_INTERRUPTED, f"interrupted{resumes}", err, prefix="eqagen: ")
    except SystemExit as err:
        if err.code != EXIT_TERMINATED:
            raise
        return say_error(EXIT_TERMINATED, f"terminated{resumes}", err, prefix="eqagen: ")
    except BrokenPipeError:
        return quiet_broken_pipe()
    except OSError as err:  # a full disk, a read-only or vanished output directory, an unreadable input
        return say_error(EXIT_BAD_INPUT, os_error_text(err), err)
    except Exception as err:  # a bug: one line, the traceback in a file
        return say_internal_error(err)


def say_error(status: int, text: str, err: BaseException, prefix: str = "eqagen: error: ") -> int:
    """The one line of a failed command, with the log that holds the details when there is one."""
    from eqagen.flows.runlog import log_path_of

    log = log_path_of(err)
    line = " ".join(text.splitlines())  # one line, whatever a library put into the message
    print(f"{prefix}{line}" + (f" (log: {log})" if log else ""), file=sys.stderr, flush=True)
    return status


def say_internal_error(err: Exception) -> int:
    """An error eqagen did not foresee: one line naming the file that holds its traceback."""
    from eqagen.flows.runlog import log_path_of

    log = log_path_of(err)
    if log is None:
        fd, name = tempfile.mkstemp(prefix="eqagen-error-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("".join(traceback.format_exception(type(err), err, err.__traceback__)))
        log = Path(name)
    detail = str(err).splitlines()[0][:300] if str(err) else ""
    print(f"eqagen: internal error: {type(err).__name__}: {detail}; this is a bug, please report it with the "
          f"traceback in {log}", file=sys.stderr, flush=True)  # fmt: skip
    return EXIT_FAILED


def quiet_broken_pipe() -> int:
    """The reader of standard output went away (``| head``): stop quietly, as other Unix tools do."""
    try:  # Python flushes stdout at exit: point it at /dev/null so that flush cannot fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # a stream without a file descriptor (tests)
        pass
    return EXIT_BROKEN_PIPE


# What to do about the operating system's refusals to write.
OS_ERROR_FIXES = {
    errno.ENOSPC: "free some space or choose another --out; finished batches are kept, so rerunning resumes",
    errno.EDQUOT: "free some space or choose another --out; finished batches are kept, so rerunning resumes",
    errno.EROFS: "the output directory is on a read-only file system: choose another --out",
    errno.EACCES: "the output directory is not writable: fix its permissions or choose another --out",
    errno.EPERM: "the output directory is not writable: fix its permissions or choose another --out",
    errno.EEXIST: "a file is in the way of the output directory: choose another --out",
    errno.ENOTDIR: "a file is in the way of the output directory: choose another --out",
}


def os_error_text(err: OSError) -> str:
    what = err.strerror or str(err)
    fix = OS_ERROR_FIXES.get(err.errno or 0)
    if fix is None and "No space left" in str(err):  # pyarrow reports the errno only in its text
        fix = OS_ERROR_FIXES[errno.ENOSPC]
    if fix is None:  # not a refusal to write: say what the system said, about what
        return f"{err.filename}: {what}" if err.filename else what
    return f"cannot write {err.filename or 'the output directory'}: {what}; fix: {fix}"


def run() -> NoReturn:
    """The ``eqagen`` command: :func:`main`, then an exit without the interpreter's teardown."""
    status = main()
    _exit_status.append(status)
    sys.exit(status)


# The command's exit status, once main() has returned it (the only state here: see _exit_without_teardown).
_exit_status: list[int] = []


def _exit_without_teardown() -> None:
    """Registered when this module is imported, before any library registers its own, so it runs last: once
    every thread is joined and every exit handler has run (Prefect's, logging's), leave at once. The
    interpreter's teardown of every module and object it skips writes nothing, and takes 0.6 s after a
    run (Prefect, pyarrow and scikit-learn loaded). Only for the command (:func:`run`), not for main()."""
    if _exit_status:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(_exit_status[0])


atexit.register(_exit_without_teardown)

if __name__ == "__main__":
    run()
