"""Measure the history export's two promises on a dataset folder's split (default: test), from its shards.

    python benchmarks/measure_model_inputs.py OUT [--split test] [--k 50]

1. Every question's program, run over the episode rebuilt from its ``history`` export alone (written to JSON
   and read back), gives the structured answer stored in the questions table.
2. The K-observation history keeps every event's step and every answer object of the questions about its
   episode (an object is kept where a kept step sees it or names it in an event).

Prints the counts, the failures (first five of each) and the seconds taken.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

from eqagen.outputs.dataset import open_dataset
from eqagen.outputs.history import asked_answer, episode_from_history, episode_history
from eqagen.outputs.readers import iter_episodes, read_questions
from eqagen.outputs.subsample import subsample_steps


def kept_objects(history: dict) -> set[str]:
    seen = {v["id"] for s in history["steps"] for v in s["visible"]}
    return seen | {e["object"] for s in history["steps"] for e in s["events"] if e["object"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--split", default="test")
    parser.add_argument("--k", type=int, default=50)
    args = parser.parse_args()
    dataset = open_dataset(args.out)
    by_episode = defaultdict(list)
    for q in read_questions(dataset, args.split):
        by_episode[q.episode_id].append(q)
    t0 = time.process_time()
    n_questions = same = n_events = events_kept = n_answer_objects = answer_objects_kept = over_k = 0
    failures: dict[str, list[str]] = defaultdict(list)
    for ep in iter_episodes(dataset):
        questions = by_episode.get(ep.episode_id)
        if not questions:
            continue
        rebuilt = episode_from_history(json.loads(json.dumps(episode_history(ep))))
        steps = subsample_steps(ep, args.k)
        small = episode_history(ep, steps)
        over_k += len(steps) > args.k
        kept_steps, kept = set(steps), kept_objects(small)
        event_steps = {e.t for e in ep.events if e.entity >= 0}
        n_events += len(event_steps)
        events_kept += len(event_steps & kept_steps)
        for q in questions:
            n_questions += 1
            if [g.to_dict() for g in asked_answer(rebuilt, q)] == [g.to_dict() for g in q.structured_answer]:
                same += 1
            else:
                failures["answer differs"].append(q.question_id)
            objects = {r.entity for g in q.structured_answer for r in g.result}
            n_answer_objects += len(objects)
            answer_objects_kept += len(objects & kept)
            if objects - kept:
                failures["answer object dropped"].append(f"{q.question_id}: {sorted(objects - kept)}")
    seconds = time.process_time() - t0
    print(f"split {args.split}: {n_questions} questions on {len(by_episode)} episodes")
    print(f"same structured answer from the history alone: {same} of {n_questions}")
    print(f"K={args.k}: event steps kept {events_kept} of {n_events}; answer objects kept {answer_objects_kept} of "
          f"{n_answer_objects}; histories over K (events alone pass K) {over_k}")  # fmt: skip
    for reason, items in failures.items():
        print(f"{reason}: {len(items)}, e.g. {items[:5]}")
    print(f"{seconds:.1f} s CPU")


if __name__ == "__main__":
    main()
