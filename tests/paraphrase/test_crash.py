"""A run killed with SIGKILL midway loses no response it committed and asks for none twice."""

import signal
import subprocess
import sys
import time
from collections import Counter

from eqagen.paraphrase.cache import ResponseCache
from eqagen.paraphrase.runner import paraphrase_records
from tests.conftest import REPO_ROOT
from tests.paraphrase.chat_server import ScriptedChatServer
from tests.paraphrase.fixtures import generated_records
from tests.paraphrase.run_stage import STAGE_SEED, stage_config

N_ITEMS, FIXTURE_SEED, CONCURRENCY = 60, 11, 4


def _wait(condition, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_killing_the_run_midway_and_rerunning_loses_and_duplicates_nothing(tmp_path):
    records = generated_records(N_ITEMS, seed=FIXTURE_SEED)
    cache_path = tmp_path / "cache.sqlite"
    with ScriptedChatServer(delay_s=0.05) as server:
        args = [server.base_url, str(cache_path), str(N_ITEMS), str(FIXTURE_SEED), str(CONCURRENCY)]
        proc = subprocess.Popen([sys.executable, "-m", "tests.paraphrase.run_stage", *args], cwd=REPO_ROOT)
        _wait(lambda: server.responses_ok >= 20 or proc.poll() is not None, 120)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL  # killed midway, not finished
        _wait(lambda: server.in_flight == 0, 10)
        sent_before_kill = Counter(server.ok_bodies)
        with ResponseCache(cache_path) as cache:
            committed = len(cache)
        answered = sum(sent_before_kill.values())
        assert 20 <= answered < N_ITEMS
        assert answered - CONCURRENCY <= committed <= answered  # only replies in flight at the kill are lost

        rerun = paraphrase_records(records, stage_config(server.base_url, cache_path, CONCURRENCY), seed=STAGE_SEED)
        sent_after = server.ok_bodies - sent_before_kill

    asked_twice = sum(1 for body in sent_after if body in sent_before_kill)
    assert asked_twice == answered - committed  # nothing committed is asked for again
    assert all(n == 1 for n in sent_after.values())
    assert rerun.stats["cache_hits"] == committed
    assert rerun.stats["requests_sent"] == N_ITEMS - committed
    with ResponseCache(cache_path) as cache:
        assert len(cache) == N_ITEMS  # one row per request, none twice

    with ScriptedChatServer() as fresh:  # the same run without a crash gives the same column
        reference = paraphrase_records(
            records, stage_config(fresh.base_url, tmp_path / "fresh.sqlite", CONCURRENCY), seed=STAGE_SEED
        )
    assert rerun.paraphrases == reference.paraphrases
    assert rerun.stats["validated"] == N_ITEMS
