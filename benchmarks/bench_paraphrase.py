"""Paraphrase throughput against a local chat-completions server, at concurrency 1, 8 and 32.

The server (tests/paraphrase/chat_server.py) answers every request after ``--latency`` seconds, like
a model would; the run measures what the client side adds: prompt rendering, the validator, the
cache writes, the bounded concurrency. Also measured: a rerun served entirely from the cache, and the
offline paraphraser.

For reference it also measures the bare openai client (the same prompt sizes, no cache, no
validator) at concurrency 32 against the same server: the ceiling the client library itself sets.

Targets (the issue names none; these are ours): at concurrency 32 the stage reaches at least half of
the bare client's rate (its own work costs no more than the client's), and concurrency 32 is at least
4x concurrency 1. The ideal c / latency is printed too; on a loaded machine neither comes close.

    python benchmarks/bench_paraphrase.py [--items 256] [--latency 0.1] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # the local server and the fixtures live with the tests

from eqagen.paraphrase.config import ParaphraseConfig  # noqa: E402
from eqagen.paraphrase.runner import paraphrase_records  # noqa: E402
from tests.paraphrase.fixtures import generated_records  # noqa: E402

LEVELS = (1, 8, 32)
CEILING_TARGET = 0.5  # stage items/s at 32 over the bare client's requests/s at 32
SCALING_TARGET = 4.0  # items/s at 32 over items/s at 1


@contextlib.contextmanager
def server_process(latency: float):
    """The scripted server in its own process, so its threads do not share the client's interpreter."""
    cmd = [sys.executable, "-m", "tests.paraphrase.chat_server", "--delay", str(latency), "--lifetime", "900"]
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.kill()
        proc.wait()


def server_stats(base_url: str) -> dict:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=10) as reply:
        return json.loads(reply.read())


def bare_client_rate(records: list, latency: float, concurrency: int = 32) -> float:
    """Requests per second of the bare AsyncOpenAI client, sending this stage's own first prompts."""
    import asyncio

    import openai

    from eqagen.paraphrase.prompts import ExamplePool, Shot, build_messages
    from eqagen.paraphrase.validator import derive_facts

    pool = ExamplePool(records)
    shots = [Shot(r, derive_facts(r), r.question, r.answer) for r in pool.records[:3]]
    prompts = [build_messages(r, derive_facts(r), shots) for r in records]

    async def run(base_url: str) -> float:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
        gate = asyncio.Semaphore(concurrency)

        async def one(messages: list) -> None:
            async with gate:
                await client.chat.completions.create(model="bench", messages=messages)

        start = time.perf_counter()
        await asyncio.gather(*(one(m) for m in prompts))
        await client.close()
        return len(prompts) / (time.perf_counter() - start)

    with server_process(latency) as base_url:
        return asyncio.run(run(base_url))


def run_level(records: list, concurrency: int, latency: float, cache_dir: Path) -> dict:
    with server_process(latency) as base_url:
        config = ParaphraseConfig(
            model="bench", base_url=base_url, api_key="bench", concurrency=concurrency,
            cache_path=cache_dir / f"c{concurrency}.sqlite",
        )  # fmt: skip
        start = time.perf_counter()
        result = paraphrase_records(records, config, seed=0)
        seconds = time.perf_counter() - start
        start = time.perf_counter()
        rerun = paraphrase_records(records, config, seed=0)
        rerun_seconds = time.perf_counter() - start
        assert rerun.stats["requests_sent"] == 0
        max_in_flight = server_stats(base_url)["max_in_flight"]
    ideal = min(concurrency, len(records)) / latency
    return {
        "concurrency": concurrency,
        "items_per_s": len(records) / seconds,
        "ideal_items_per_s": ideal,
        "efficiency": len(records) / seconds / ideal,
        "validated": result.stats["validated"],
        "server_max_in_flight": max_in_flight,
        "cached_rerun_items_per_s": len(records) / rerun_seconds,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds the server takes per reply")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args(argv)

    records = generated_records(args.items, seed=0)
    start = time.perf_counter()
    offline = paraphrase_records(records, ParaphraseConfig(model="offline"), seed=0)
    offline_rate = len(records) / (time.perf_counter() - start)
    assert offline.stats["validated"] == len(records)

    ceiling = bare_client_rate(records, args.latency)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for level in LEVELS:  # concurrency 1 on a quarter of the items: it is slow by nature
            subset = records[: max(8, len(records) // 4)] if level == 1 else records
            rows.append(run_level(subset, level, args.latency, Path(tmp)))

    print(f"{args.items} items, server latency {args.latency * 1000:.0f} ms per reply (2 shared cores)")
    print(
        f"{'concurrency':>11} {'items/s':>9} {'ideal':>8} {'efficiency':>10} {'max in flight':>13} {'cached rerun':>13}"
    )
    for r in rows:
        print(
            f"{r['concurrency']:>11} {r['items_per_s']:>9.1f} {r['ideal_items_per_s']:>8.1f} "
            f"{r['efficiency']:>10.2f} {r['server_max_in_flight']:>13} {r['cached_rerun_items_per_s']:>12.0f}/s"
        )
    print(f"bare openai client at concurrency 32: {ceiling:.1f} requests/s")
    print(f"offline paraphraser: {offline_rate:.0f} items/s")
    scaling = rows[-1]["items_per_s"] / rows[0]["items_per_s"]
    share = rows[-1]["items_per_s"] / ceiling
    verdict = "met" if scaling >= SCALING_TARGET else "MISSED"
    print(f"scaling 32 vs 1: {scaling:.1f}x (target >= {SCALING_TARGET:.0f}x): {verdict}")
    verdict = "met" if share >= CEILING_TARGET else "MISSED"
    print(f"stage at 32 / bare client at 32: {share:.2f} (target >= {CEILING_TARGET}): {verdict}")
    if args.json:
        payload = {
            "items": args.items, "latency_s": args.latency, "levels": rows, "offline_items_per_s": offline_rate,
            "bare_client_requests_per_s": ceiling, "scaling_32_vs_1": scaling, "share_of_bare_client": share,
            "targets": {"scaling": SCALING_TARGET, "share_of_bare_client": CEILING_TARGET},
        }  # fmt: skip
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
