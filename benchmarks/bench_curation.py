"""Balance and split 1,000,000 candidate question records; target: under 30 s on one core.

    python benchmarks/bench_curation.py [--records 1000000] [--seed 0] [--json PATH]

The candidate pool is synthetic (eqagen.curation.synthetic: Zipf-popular questions over many scenes,
skewed answers, duplicates within scenes, grounded and ungrounded forms) and is built before the
clock starts. Also timed: the split alone over all candidate records (its worst case: a million rows,
groups of hundreds). Memory: the resident set size before the stages and the process's peak (the peak may
come from building the pool); with ``--heap`` also the traced heap peak of the two stages (tracemalloc
sees numpy's buffers but not Arrow's), measured in a second, untimed pass.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import tracemalloc
from pathlib import Path

from eqagen.curation.balance import balance, blind_baseline
from eqagen.curation.config import BalanceConfig, SplitConfig
from eqagen.curation.splits import split
from eqagen.curation.synthetic import candidate_pool

TARGET_SECONDS = 30.0


def run(n_records: int, seed: int, heap: bool) -> dict:
    pool = candidate_pool(n_records, seed, n_signatures=40)
    rss_before = _current_rss_mb()
    start = time.perf_counter()
    balanced, balance_stats = balance(pool, BalanceConfig(), seed)
    balance_s = time.perf_counter() - start
    start = time.perf_counter()
    result, split_stats = split(balanced, SplitConfig(), seed)
    split_s = time.perf_counter() - start
    total = balance_s + split_s
    start = time.perf_counter()
    split(pool, SplitConfig(), seed)  # the split's worst case: every record, large groups
    split_all_s = time.perf_counter() - start
    out = {
        "records": pool.num_rows,
        "scenes": len(pool["scene_id"].unique()),
        "kept": balance_stats["kept"],
        "questions_kept": balance_stats["questions_kept"],
        "candidates_per_kept_question": balance_stats["candidates_per_kept_question"],
        "balance_seconds": round(balance_s, 3),
        "split_seconds": round(split_s, 3),
        "total_seconds": round(total, 3),
        "split_all_records_seconds": round(split_all_s, 3),
        "target_seconds": TARGET_SECONDS,
        "meets_target": total < TARGET_SECONDS,
        "rss_before_stages_mb": round(rss_before, 1),
        "process_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "split_fraction": split_stats["fraction"],
        "unseen_share": split_stats["unseen_share"],
        "max_stratum_share_deviation": split_stats["max_stratum_share_deviation"],
        "blind_baseline": blind_baseline(result),
    }
    if heap:  # a second, untimed pass: tracemalloc slows Python code down
        tracemalloc.start()
        split(balance(pool, BalanceConfig(), seed)[0], SplitConfig(), seed)
        out["heap_peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
        tracemalloc.stop()
    return out


def _current_rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--heap", action="store_true", help="also measure the traced heap peak (second pass)")
    args = parser.parse_args(argv)
    out = run(args.records, args.seed, args.heap)
    print(
        f"balance {out['balance_seconds']:.2f} s + split {out['split_seconds']:.2f} s = {out['total_seconds']:.2f} s "
        f"for {out['records']:,} records ({out['scenes']:,} scenes) -> {out['kept']:,} kept "
        f"[target < {TARGET_SECONDS:.0f} s: {'met' if out['meets_target'] else 'MISSED'}]"
    )
    print(f"split alone of all {out['records']:,} candidate records: {out['split_all_records_seconds']:.2f} s")
    heap = f", traced heap peak {out['heap_peak_mb']} MB" if "heap_peak_mb" in out else ""
    print(f"memory: RSS {out['rss_before_stages_mb']} MB before the stages, peak {out['process_peak_rss_mb']} MB{heap}")
    print(f"split {out['split_fraction']}, unseen {out['unseen_share']}, blind baseline {out['blind_baseline']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0 if out["meets_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
