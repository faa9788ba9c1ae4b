"""Checks of the curation must-haves, recomputed in plain Python from the output table's columns
(independent of the columnar implementation they check)."""

from __future__ import annotations

from collections import Counter, defaultdict

import pyarrow as pa


def answer_order(value: str) -> tuple:
    """Choices read numerically where the answers are numbers (1, 2, 10), else alphabetically."""
    try:
        return (1, float(value), value)
    except ValueError:
        return (2, 0.0, value)


def rows(table: pa.Table, *columns: str) -> list[tuple]:
    data = [table.column(c).to_pylist() for c in columns]
    return list(zip(*data))


def groups(table: pa.Table) -> dict[str, list[tuple]]:
    """balance_key -> [(scene_id, answer_key, choices, answer_type, split)]."""
    out: dict[str, list[tuple]] = defaultdict(list)
    for key, scene, answer, choices, answer_type, split in rows(
        table, "balance_key", "scene_id", "answer_key", "choices", "answer_type", "split"
    ):
        out[key].append((scene, answer, tuple(choices), answer_type, split))
    return out


def assert_exactly_balanced(table: pa.Table) -> None:
    for key, members in groups(table).items():
        scenes = [m[0] for m in members]
        assert len(scenes) == len(set(scenes)), f"{key}: a scene appears twice"
        counts = Counter(m[1] for m in members)
        assert len(counts) >= 2, f"{key}: only one answer {counts}"
        assert len(set(counts.values())) == 1, f"{key}: answers not equally frequent {counts}"
        expected_choices = tuple(sorted(counts, key=answer_order))
        assert {m[2] for m in members} == {expected_choices}, f"{key}: choices differ from the answer set"
        if members[0][3] == "yes/no":
            assert counts["yes"] == counts["no"] == len(members) / 2, f"{key}: yes/no not 50/50"


def majority_baseline(table: pa.Table) -> tuple[float, float]:
    """(accuracy of the majority answer per balance_key, mean of 1/k over records)."""
    per_key: dict[str, Counter] = defaultdict(Counter)
    for key, answer in rows(table, "balance_key", "answer_key"):
        per_key[key][answer] += 1
    n = sum(sum(c.values()) for c in per_key.values())
    accuracy = sum(max(c.values()) for c in per_key.values()) / n
    chance = sum(sum(c.values()) / len(c) for c in per_key.values()) / n
    return accuracy, chance


def assert_blind_baseline_at_chance(table: pa.Table) -> None:
    for key, members in groups(table).items():
        counts = Counter(m[1] for m in members)
        assert max(counts.values()) / len(members) <= 1 / len(counts) + 0.01, key
    accuracy, chance = majority_baseline(table)
    assert accuracy <= chance + 0.01


def assert_groups_whole(table: pa.Table) -> None:
    for key, members in groups(table).items():
        assert len({m[4] for m in members}) == 1, f"balance group {key} spans splits"


def unseen_shares(table: pa.Table) -> dict[str, float]:
    data = rows(table, "scene_id", "split")
    train_scenes = {s for s, sp in data if sp == "train"}
    out = {}
    for name in ("validation", "test"):
        members = [s for s, sp in data if sp == name]
        out[name] = sum(s not in train_scenes for s in members) / len(members)
    return out


def split_fractions(table: pa.Table) -> dict[str, float]:
    counts = Counter(table.column("split").to_pylist())
    return {name: counts[name] / table.num_rows for name in ("train", "validation", "test")}


def stratum_deviation(table: pa.Table, minimum: int = 50) -> float:
    """Largest |share of a stratum within a split - its share overall|, over strata of >= minimum."""
    data = rows(table, "family", "query_type", "predicate_families", "grounded", "split")
    strata = Counter((f, q, "+".join(sorted(p)), g) for f, q, p, g, _ in data)
    per_split = Counter(sp for *_, sp in data)
    joint = Counter(((f, q, "+".join(sorted(p)), g), sp) for f, q, p, g, sp in data)
    worst = 0.0
    for stratum, n in strata.items():
        if n < minimum:
            continue
        for name, size in per_split.items():
            worst = max(worst, abs(joint[stratum, name] / size - n / len(data)))
    return worst


def assert_split_targets(table: pa.Table, ratios=(0.7, 0.15, 0.15), unseen: float | None = 0.5) -> None:
    fractions = split_fractions(table)
    for name, target in zip(("train", "validation", "test"), ratios):
        assert abs(fractions[name] - target) <= 0.02, f"{name}: {fractions[name]:.3f} vs {target}"
    if unseen is not None:
        for name, share in unseen_shares(table).items():
            assert abs(share - unseen) <= 0.05, f"{name}: unseen share {share:.3f}"
    assert stratum_deviation(table) <= 0.03
