"""The run's workers and its driver (eqagen.flows.pool): every batch starts at once, before and without
any Prefect flow, in plan order, each exactly once; batches finished by an earlier run are not started;
the checkpoints and the shards equal an inline run's; a failed batch fails the run and starts nothing
more; and the workers never outlive the run."""

from __future__ import annotations

import gc
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pytest

from eqagen.config import load_config
from eqagen.flows import pipeline, stages
from eqagen.flows.pool import ForkedPool, RunDriver, forked_pool
from eqagen.flows.timeline import BARRIER, Span, Timeline
from tests.processes import alive
from tests.test_cli import shard_digests


def wait_until(predicate, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def plan(config) -> list[stages.Batch]:
    return stages.plan_batches(config.generation, config.seed)


def test_the_driver_runs_every_batch_once_in_plan_order_then_the_finish(tmp_path: Path, small_config) -> None:
    config = small_config("generation.n_episodes=30", "generation.batch_size=3")  # 10 batches
    ctx, batches = pipeline.make_context(config, tmp_path / "pool"), plan(config)
    pipeline.run_batch(ctx, batches[2])  # an earlier, interrupted run finished batch 2
    todo = [b for b in batches if b.name != batches[2].name]
    timeline = Timeline()
    with forked_pool(2, timeline) as pool:
        submitted: list[str] = []
        submit = pool.executor.submit

        def counting_submit(fn, *args):  # counts, then submits for real
            submitted.append(args[1].name if fn is pipeline.run_batch else fn.__name__)
            return submit(fn, *args)

        pool.executor.submit = counting_submit
        summary = pipeline.RunSummary(ctx.out_dir)
        driver = RunDriver(config, ctx, pool, summary).start()
        assert driver.resumed == {batches[2].name} and driver.todo == todo
        finished = driver.finished.result(timeout=300)
    batch_runs = [name for name in submitted if name.startswith("batch-")]
    assert batch_runs == [b.name for b in todo], "every batch not yet done, once, in plan order"
    assert finished is summary and summary.batches_resumed == 1 and summary.counts["questions_total"] > 0
    assert [s.stage for s in timeline.relative() if s.stage == "run_batch"] == ["run_batch"] * len(todo)
    rounds = len(json.loads((ctx.out_dir / "stats.json").read_text())["stages"]["ask"]["rounds"])
    assert_each_step_starts_at_a_barrier(timeline.relative(), rounds)
    inline_out = tmp_path / "inline"
    inline_summary = pipeline.generate_inline(config, inline_out)
    assert set(summary.stage_seconds) == set(inline_summary.stage_seconds), "the driver times every stage"
    names = [b.name for b in batches]
    inline = pipeline.make_context(config, inline_out)
    for read in ("read_questions", "read_episodes"):
        ours, theirs = getattr(ctx.store, read)(names), getattr(inline.store, read)(names)
        assert isinstance(ours, pa.Table) and ours.num_rows > 0 and ours.equals(theirs), read
    assert shard_digests(ctx.out_dir) == shard_digests(inline_out) != {}


STEPS = (  # a run's steps in order, by their units: each needs every unit of the steps before it
    {"run_batch"},
    {"ask_batch"},
    {"paraphrase_piece", "write_question_shard"},
    {"text_model_answers", "draw_plot", "example_picture"},
)


def assert_each_step_starts_at_a_barrier(spans: list[Span], rounds: int) -> None:
    """The run marks a barrier where each step starts: after the batches, at each ask round, before the
    shards and before the audit's units; every unit of a step starts after a barrier that comes after every
    unit of the steps before it has ended (the timeline's predictions cut phases there)."""
    barriers = [s.start for s in spans if s.stage == BARRIER]
    assert len(barriers) == 1 + rounds + 2, (len(barriers), rounds)
    ended = float("-inf")
    for step in STEPS:
        units = [s for s in spans if s.stage in step]
        assert bool(units) == (step != {"ask_batch"} or rounds > 0), step
        if not units:
            continue
        first = min(u.start for u in units)
        assert step == STEPS[0] or any(ended <= b <= first for b in barriers), (step, ended, first)
        ended = max(ended, *(u.end for u in units))


def test_a_real_run_marks_a_barrier_where_each_of_its_steps_starts(tmp_path: Path) -> None:
    """The household engine and the demo cut small, on two forked workers, with its ask rounds."""
    config = load_config("demo", ["generation.n_episodes=24", "generation.batch_size=6", "runner.progress=false"])
    ctx, timeline = pipeline.make_context(config, tmp_path), Timeline()
    with forked_pool(2, timeline) as pool:
        RunDriver(config, ctx, pool, pipeline.RunSummary(ctx.out_dir)).start().finished.result(timeout=300)
    rounds = len(json.loads((ctx.out_dir / "stats.json").read_text())["stages"]["ask"]["rounds"])
    assert rounds >= 2
    assert_each_step_starts_at_a_barrier(timeline.relative(), rounds)


def failing_batch(*args):
    raise RuntimeError("a batch that fails")


def test_a_failed_batch_fails_the_run_and_starts_nothing_more(tmp_path: Path, small_config, monkeypatch) -> None:
    config = small_config("generation.n_episodes=30", "generation.batch_size=3")
    ctx = pipeline.make_context(config, tmp_path)
    with pytest.raises(RuntimeError, match="a batch that fails"), forked_pool(1, Timeline()) as pool:
        submitted: list[str] = []
        submit = pool.executor.submit

        def failing_first(fn, *args):
            submitted.append(args[1].name)
            return submit(failing_batch if len(submitted) == 1 else fn, *args)

        pool.executor.submit = failing_first
        driver = RunDriver(config, ctx, pool, pipeline.RunSummary(tmp_path)).start()
        with pytest.raises(RuntimeError, match="a batch that fails"):
            driver.batch(driver.todo[0].name).result(timeout=120)
        driver.finished.result(timeout=120)
    assert len(submitted) <= 2, f"batches started after the failure: {submitted}"
    assert not (tmp_path / "manifest.json").exists()


POOL_OWNER = textwrap.dedent(
    """
    import sys, time
    from eqagen.flows.pool import ForkedPool
    pool = ForkedPool(2)
    print(*pool.executor._processes, flush=True)
    pool.executor.submit(time.sleep, 120)
    time.sleep(120)
    """
)


EARLY_CTRL_C = textwrap.dedent(
    """
    import os, signal, time
    from eqagen.flows.pool import ForkedPool
    pool = ForkedPool(2)
    for pid in pool.executor._processes:  # at once: before the workers' initializers can have run
        os.kill(pid, signal.SIGINT)
    time.sleep(1)
    print(pool.executor.submit(os.getpid).result(timeout=30) in pool.executor._processes, flush=True)
    """
)


def test_a_ctrl_c_right_after_the_fork_does_not_kill_a_worker() -> None:
    """Found by CI: SIGINT between a worker's fork and its initializer killed it (KeyboardInterrupt in the
    initializer); workers are now forked with SIGINT blocked until they ignore it."""
    out = subprocess.run([sys.executable, "-c", EARLY_CTRL_C], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr[-2000:]
    assert "KeyboardInterrupt" not in out.stderr, out.stderr[-2000:]


def test_workers_die_with_a_killed_run_and_leave_ctrl_c_to_it() -> None:
    owner = subprocess.Popen([sys.executable, "-c", POOL_OWNER], stdout=subprocess.PIPE, text=True)
    try:
        workers = [int(p) for p in owner.stdout.readline().split()]
        assert len(workers) == 2 and all(alive(p) for p in workers)
        for pid in workers:
            os.kill(pid, signal.SIGINT)  # Ctrl-C reaches the whole process group: the run decides
        time.sleep(0.5)
        assert all(alive(p) for p in workers), "a worker stopped on SIGINT"
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    wait_until(lambda: not any(alive(p) for p in workers), timeout=10)


def test_a_forked_worker_leaves_what_it_inherits_out_of_the_collector() -> None:
    """The run's imports, inherited at the fork, are frozen in each worker (``gc.freeze``): the worker's
    collections walk only what its units make (without it, a full collection walks the whole inherited heap)."""
    pool = ForkedPool(1)
    try:
        frozen = pool.executor.submit(gc.get_freeze_count).result(timeout=30)
    finally:
        pool.close(False)
    assert frozen >= len(gc.get_objects()) // 2, f"{frozen} objects frozen in the worker"


def test_closing_on_an_error_stops_busy_workers_at_once() -> None:
    pool = ForkedPool(2)
    workers = list(pool.executor._processes)
    busy = [pool.executor.submit(time.sleep, 60) for _ in range(2)]
    start = time.monotonic()
    pool.close(cancel=True)
    assert time.monotonic() - start < 10
    assert not any(alive(p) for p in workers) and all(f.done() for f in busy)


# A worker that has sent the first part of its result's bytes (a large result fills the pipe) when the run
# cancels the pool: the executor's manager thread is left reading the rest, which never comes.
HALF_SENT_RESULT = textwrap.dedent(
    """
    import os, struct, sys, time
    from eqagen.flows.pool import ForkedPool

    def send_half_a_result():
        frame = sys._getframe()
        while frame.f_code.co_name != "_process_worker":  # the executor's worker loop, which holds the pipe
            frame = frame.f_back
        pipe = frame.f_locals["result_queue"]._writer
        os.write(pipe.fileno(), struct.pack("!i", 1 << 20) + b"x" * 1000)  # 1 MiB announced, 1,000 bytes sent
        time.sleep(600)

    pool = ForkedPool(2)
    pool.executor.submit(send_half_a_result)
    time.sleep(1)  # the manager thread is now reading the announced bytes
    pool.close(cancel=True)
    print("closed", flush=True)
    """
)


def test_cancelling_stops_a_pool_whose_worker_died_halfway_through_sending_a_result() -> None:
    """Found by CI: SIGTERM while a worker sent a batch's result, and the run never ended: the executor's
    manager thread waited for the rest of the result, and closing the pool waited for that thread."""
    out = subprocess.run([sys.executable, "-c", HALF_SENT_RESULT], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "closed", out.stderr[-2000:]


def processes_of(out: Path) -> list[int]:
    """Live processes whose command line names ``out``: the run and its forked workers (the server's
    command line does not name it; tests.test_cli.server_pids finds it by its environment)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(out).encode() in (proc / "cmdline").read_bytes() and alive(int(proc.name)):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def interrupt(cmd: list[str], out: Path, sig: int, after: int) -> tuple[int, int]:
    """Run ``cmd``, send ``sig`` once ``after`` batches are checkpointed; (exit code, batches done)."""
    run = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    done = lambda: len(list(out.glob(".eqagen/batches/*/*/DONE")))  # noqa: E731
    wait_until(lambda: done() >= after or run.poll() is not None, timeout=300)
    run.send_signal(sig)
    return run.wait(timeout=60), done()


@pytest.mark.slow  # four small Prefect runs with the processes runner: 2-4 minutes here
def test_processes_runner_stopped_killed_and_resumed_gives_inline_bytes_and_leaves_nothing(tmp_path: Path) -> None:
    from tests.test_cli import server_pids

    small = ["--no-progress", "--set", "generation.n_episodes=24", "--set", "generation.batch_size=3"]
    out, inline = tmp_path / "p", tmp_path / "inline"
    cmd = [sys.executable, "-m", "eqagen.cli", "generate", "demo", "--out", str(out), "--runner", "processes", *small]
    code, done = interrupt(cmd, out, signal.SIGTERM, after=1)
    assert code == 128 + signal.SIGTERM and 1 <= done < 8, (code, done)
    wait_until(lambda: not processes_of(out) and not server_pids(out), timeout=15)  # workers and server stopped
    code, done = interrupt(cmd, out, signal.SIGKILL, after=done + 2)
    assert code == -signal.SIGKILL and 3 <= done < 8, (code, done)
    wait_until(lambda: not processes_of(out) and not server_pids(out), timeout=15)  # workers and server died
    summary = tmp_path / "s.json"
    rerun = subprocess.run([*cmd, "--summary-json", str(summary)], capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert json.loads(summary.read_text())["batches"]["resumed"] >= done
    cmd = [sys.executable, "-m", "eqagen.cli", "generate", "demo", "--out", str(inline), "--runner", "inline", *small]
    assert subprocess.run(cmd, capture_output=True, timeout=600, check=False).returncode == 0
    assert shard_digests(out) == shard_digests(inline) != {}
    assert not processes_of(out) and not server_pids(out)
    with sqlite3.connect(out / ".eqagen" / "prefect" / "prefect.db") as db:
        rows = db.execute("select state_type, count(*) from task_run where name like 'sample-batch%' group by 1")
        assert dict(rows.fetchall()).get("COMPLETED", 0) >= 8 - done, "each batch of the rerun is a Prefect task run"
