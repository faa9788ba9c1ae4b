"""The method's criteria, recomputed from the questions table alone (``eqagen audit`` enforces them).

Each criterion is one small function over the questions table (and the targets the manifest's config
sets) returning a :class:`Criterion`: what was measured, the target, whether it is met and one line
that says so. Their results go into ``stats.json`` (``dataset.criteria``) with the other statistics,
and ``eqagen audit`` fails, naming them, when any is missed. docs/audit.md says where each target
comes from.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ValidationError
from scipy.stats import binom, binomtest

from eqagen.core import SPLITS, ConfigError, DataFileError, UnknownNameError
from eqagen.curation.compose import TEMPORAL, mix_targets
from eqagen.curation.config import SplitConfig
from eqagen.predicates.config import QuestionConfig
from eqagen.predicates.registry import world_support

CRITERIA_COLUMNS = (
    "question_id", "scene_id", "family", "split", "query_type", "balance_key", "question", "paraphrase",
    "program", "structured_answer", "grounded",
)  # fmt: skip
OPTIONAL_COLUMNS = ("paraphrase", "grounded")  # a table without them: no paraphrase, no grounded record
UNSEEN_TOLERANCE = 0.05  # held-out splits: unseen share within this of split.unseen_fraction
MIX_TOLERANCE = 0.03  # a mix share within this of its target at least (more where the count is small)
MIX_CONFIDENCE = 0.99  # the binomial interval a share drawn at its target falls in this often
ALPHA = 0.05  # the family-wise error rate of the blind baselines' tests (Holm)
BLIND_TOLERANCE = 0.02  # overall, a blind model's accuracy within this of chance, once that is meaningful
# The 2-point rule is judged once 2 points are at least this many standard errors of a guesser at chance
# (about 2,100 test records at chance 1/3): with fewer, chance alone strays past 2 points too often.
TOLERANCE_STANDARD_ERRORS = 2.0
EXAMPLES = 3  # failing balance groups quoted
REGENERATE = "regenerate the dataset with eqagen generate"
ModelT = TypeVar("ModelT", bound=BaseModel)


@dataclass(frozen=True)
class Criterion:
    """One criterion's result: ``test`` says how it is judged, ``detail`` what was measured and why it
    passed or missed."""

    name: str
    ok: bool
    measured: dict[str, Any]
    target: str
    detail: str
    test: str = ""


@dataclass(frozen=True)
class MethodTargets:
    """What the config asks of the dataset, read from the manifest's resolved config (defaults where a
    section is missing, as in a dataset built by hand)."""

    unseen_fraction: float
    split_by: str
    split_file: bool
    query_mix: dict[str, float]
    family_mix: dict[str, float]
    world: str | None
    n_filters_mix: dict[int, float] = field(default_factory=dict)
    grounded_share: float | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None, questions: pa.Table) -> MethodTargets:
        """Raises ConfigError naming the section where the config's split or questions section is invalid."""
        config = config or {}
        split = _section(SplitConfig, config, "split")
        asked = _section(QuestionConfig, config, "questions")
        generation = config.get("generation")
        world = generation.get("family") if isinstance(generation, Mapping) else None
        return cls(
            unseen_fraction=split.unseen_fraction,
            split_by=split.by,
            split_file=split.split_file is not None,
            query_mix=dict(asked.query_mix),
            family_mix=dict(asked.family_mix),
            world=world or _most_common(questions, "family"),
            n_filters_mix=dict(asked.n_filters_mix),
            grounded_share=asked.grounded_share,
        )


def _section(model: type[ModelT], config: Mapping[str, Any], name: str) -> ModelT:
    try:
        return model.model_validate(config.get(name) or {})
    except ValidationError as err:
        raise ConfigError(f"config.{name}", err.errors()[0]["msg"]) from err


def _most_common(table: pa.Table, column: str) -> str | None:
    if column not in table.column_names or table.num_rows == 0:
        return None
    return Counter(table[column].to_pylist()).most_common(1)[0][0]


def not_applicable(name: str, target: str, why: str) -> Criterion:
    return Criterion(name, True, {}, target, f"not applicable: {why}", "none: not applicable")


# -- answer content --------------------------------------------------------------------------------------
def answer_contents(questions: pa.Table) -> list[str]:
    """Per record, the distinct values of its answer groups, sorted and joined with " | ": what a reader
    must say. Two answers that differ only in how many anchors repeat a value ("1" and "1 | 1") have the
    same content."""
    answers = questions["structured_answer"].combine_chunks()
    values = pc.struct_field(pc.list_flatten(answers), "value").to_pylist()
    parents = pc.list_parent_indices(answers).to_numpy()
    distinct: list[set[str]] = [set() for _ in range(questions.num_rows)]
    for parent, value in zip(parents, values):
        distinct[parent].add(value or "")
    return [" | ".join(sorted(s)) for s in distinct]


def group_contents(keys: Sequence[str], contents: Sequence[str]) -> dict[str, list[str]]:
    """Per balance group, its distinct contents, sorted."""
    seen: dict[str, set[str]] = defaultdict(set)
    for key, content in zip(keys, contents):
        seen[key].add(content)
    return {key: sorted(s) for key, s in seen.items()}


# -- 1. unseen share -------------------------------------------------------------------------------------
def unseen_bounds(unseen_fraction: float, split_by: str) -> tuple[float, float]:
    """Where each held-out split's unseen share must lie: within UNSEEN_TOLERANCE of ``unseen_fraction``
    (a split by scene holds every validation and test scene out: 1)."""
    centre = 1.0 if split_by == "scene" else unseen_fraction
    return max(centre - UNSEEN_TOLERANCE, 0.0), min(centre + UNSEEN_TOLERANCE, 1.0)


def unseen_share(questions: pa.Table, targets: MethodTargets) -> Criterion:
    """For validation and for test, the share of records whose scene no train record uses."""
    name = "unseen_share"
    if targets.split_file:
        return not_applicable(name, "n/a", "the split was read from a split file")
    low, high = unseen_bounds(targets.unseen_fraction, targets.split_by)
    target = f"each of validation and test in [{low:.2f}, {high:.2f}]"
    splits, scenes = questions["split"].to_pylist(), questions["scene_id"].to_pylist()
    train_scenes = {sc for sp, sc in zip(splits, scenes) if sp == "train"}
    measured: dict[str, Any] = {}
    for held_out in SPLITS[1:]:
        unseen = [sc not in train_scenes for sp, sc in zip(splits, scenes) if sp == held_out]
        if unseen:
            share = round(float(np.mean(unseen)), 6)
            measured[held_out] = {"share": share, "ok": low <= share <= high}
    if not measured:
        return not_applicable(name, target, "no validation or test records")
    missed = [s for s, v in measured.items() if not v["ok"]]
    detail = ", ".join(f"{s} {v['share']:.3f}" for s, v in measured.items())
    test = f"each held-out split's unseen share within ±{UNSEEN_TOLERANCE} of the target"
    return Criterion(
        name, not missed, measured, target, detail + (f" (missed: {', '.join(missed)})" if missed else ""), test
    )


# -- 2. content balance ----------------------------------------------------------------------------------
def content_balance(questions: pa.Table, contents: Sequence[str] | None = None) -> Criterion:
    """Every balance group has at least 2 distinct contents, each equally frequent."""
    contents = answer_contents(questions) if contents is None else contents
    per_group: dict[str, Counter] = defaultdict(Counter)
    for key, content in zip(questions["balance_key"].to_pylist(), contents):
        per_group[key][content] += 1
    failing = {k: c for k, c in per_group.items() if len(c) < 2 or len(set(c.values())) > 1}
    records = sum(sum(c.values()) for c in failing.values())
    examples = [f"{k!r}: {dict(sorted(failing[k].items()))}" for k in sorted(failing)[:EXAMPLES]]
    measured = {"groups": len(per_group), "failing_groups": len(failing), "failing_records": records}
    detail = f"{len(failing)} of {len(per_group)} groups ({records} records) not balanced on content"
    return Criterion(
        "content_balance",
        not failing,
        measured,
        "0 failing groups",
        detail + (", e.g. " + "; ".join(examples) if examples else ""),
        "count of groups with fewer than 2 contents or unequal counts per content (exact: none may fail)",
    )


# -- 3. mix ----------------------------------------------------------------------------------------------
def _supported(world: str | None) -> tuple[list[str], list[str]] | None:
    """The world family's query types and filter families, or None where it is not known."""
    if world is None:
        return None
    try:
        support = world_support(world)
    except UnknownNameError:
        return None
    return sorted(support.queries), sorted(support.filters)


def share_bounds(target: float, n: int) -> tuple[float, float]:
    """Where the share of ``n`` items (records, or filters) may lie for a target share: the interval that
    the share of ``n`` draws at the target falls in MIX_CONFIDENCE of the time (binomial), and never
    narrower than ±MIX_TOLERANCE. Every mix dimension is judged by this one rule."""
    low, high = target - MIX_TOLERANCE, target + MIX_TOLERANCE
    if n:
        low_count, high_count = binom.interval(MIX_CONFIDENCE, n, target)
        low, high = min(low, low_count / n), max(high, high_count / n)
    return float(max(round(low, 6), 0.0)), float(min(round(high, 6), 1.0))


def judged_shares(counts: Counter, targets: Mapping[str, float]) -> dict[str, dict[str, Any]]:
    """Per name of ``targets``: its share of ``counts``, the target, the bounds :func:`share_bounds` sets for
    the count and whether the share is within them."""
    total = sum(counts.values())
    judged = {}
    for name, target in targets.items():
        share = round(counts.get(name, 0) / total, 6) if total else 0.0
        low, high = share_bounds(target, total)
        judged[name] = {"share": share, "target": target, "low": low, "high": high,
                        "ok": bool(low - 1e-9 <= share <= high + 1e-9)}  # fmt: skip
    return judged


def _missed_shares(label: str, judged: Mapping[str, Mapping[str, Any]]) -> list[str]:
    return [
        f"{label} {n} {e['share']:.3f} outside [{e['low']:.3f}, {e['high']:.3f}]"
        for n, e in judged.items()
        if not e["ok"]
    ]


MIX_TEST = (
    f"each share within the {MIX_CONFIDENCE:.0%} binomial interval of its target for its count, "
    f"at least ±{MIX_TOLERANCE}"
)


def mix(questions: pa.Table, targets: MethodTargets) -> Criterion:
    """Query-type shares (per record) and filter-family shares (per filter) against the config's mixes,
    normalised over what the world family supports; the moment family at least its share; the shares of
    records with 1 to 4 filters against ``n_filters_mix`` (normalised over its own keys, as the sampler
    draws), and the share of grounded records against ``grounded_share`` (where the table says which are),
    each within :func:`share_bounds` for its count."""
    supported = _supported(targets.world)
    query_counts = Counter(questions["query_type"].to_pylist())
    filters = pc.list_flatten(questions["program"].combine_chunks().field("filters"))
    family_counts = Counter(pc.struct_field(filters, "family").to_pylist())
    queries, families = supported or (
        sorted(set(targets.query_mix) | set(query_counts)),
        sorted(set(targets.family_mix) | set(family_counts)),
    )
    goal = mix_targets(
        targets.query_mix, targets.family_mix, queries, families, targets.n_filters_mix, targets.grounded_share
    )
    query_targets, family_targets = goal.queries, goal.families
    measured: dict[str, Any] = {
        "query_type": judged_shares(query_counts, query_targets),
        "filter_family": judged_shares(family_counts, family_targets),
    }
    missed = _missed_shares("query", measured["query_type"]) + _missed_shares("family", measured["filter_family"])
    if goal.n_filters:  # records per number of filters: TAG-EQA's multi-factor questions are its point
        lengths = pc.list_value_length(questions["program"].combine_chunks().field("filters")).to_pylist()
        counts = Counter(str(n) for n in lengths if n)  # of the records with filters
        n_targets = {str(n): share for n, share in goal.n_filters.items()}
        measured["n_filters"] = judged_shares(counts, n_targets)
        missed += _missed_shares("filters", measured["n_filters"])
    if goal.grounded is not None and "grounded" in questions.column_names:
        grounded = pc.fill_null(questions["grounded"], False).to_pylist()
        measured["grounded"] = judged_shares(Counter(map(bool, grounded)), {True: goal.grounded})[True]
        missed += _missed_shares("grounded", {"share": measured["grounded"]})
    unsupported = sorted((set(query_counts) - set(queries)) | (set(family_counts) - set(families)))
    if unsupported:
        measured["unsupported"] = {"names": ", ".join(unsupported), "ok": False}
        missed.append(f"not supported by {targets.world}: {', '.join(unsupported)}")
    moment = goal.floors.get(TEMPORAL)
    if moment:  # temporal questions: the family the sampler loses first, so it has a floor of its own
        share = measured["filter_family"][TEMPORAL]["share"]
        measured["moment_floor"] = {"share": share, "minimum": moment, "ok": share >= moment - 1e-9}
        if not measured["moment_floor"]["ok"]:
            missed.append(f"moment {share:.3f} below {moment:.3f}")
    target = "the config's mix (query types, filter families, filters per question, grounded share)"
    target += f"; moment >= {moment:.3f}" if moment else ""
    n = f"{sum(query_counts.values())} records, {sum(family_counts.values())} filters"
    detail = f"{n}: all shares within bounds" if not missed else f"{n}: missed: " + ", ".join(missed)
    test = MIX_TEST + ("; the moment family's share at least its target" if moment else "")
    return Criterion("mix", not missed, measured, target, detail, test)


# -- 4. blind baselines ----------------------------------------------------------------------------------
Answerer = Callable[[np.ndarray], list[str]]  # test row indices -> the content each is answered with


def majority_answers(keys: Sequence[str], contents: Sequence[str], test: np.ndarray) -> list[str]:
    """Each test record answered with the most frequent content of its balance group among the test
    records (ties: the lexicographically smallest)."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for i in test:
        counts[keys[i]][contents[i]] += 1
    best = {k: min(c, key=lambda content: (-c[content], content)) for k, c in counts.items()}
    return [best[keys[i]] for i in test]


OTHER = "\x00other"  # the class of every train content that no test record may answer with


def text_model_answers(
    texts: Sequence[str], contents: Sequence[str], choices: Sequence[Sequence[str]], train: np.ndarray, test: np.ndarray
) -> list[str]:
    """A blind multiple-choice model: TF-IDF over words and word pairs with logistic regression, fitted on
    the train records (text -> content) and asked, for each test record, which of its ``choices`` is most
    likely (a content the model never saw: probability 0; ties: the lexicographically smallest).

    Train contents that are no test record's choice are fitted as one class: they can never be picked, and
    with a class each the fit would grow with every rare list of objects (minutes instead of seconds)."""
    from sklearn.feature_extraction.text import TfidfVectorizer  # imported here: only this criterion needs it
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    pickable = {c for options in choices for c in options}
    labels = [contents[i] if contents[i] in pickable else OTHER for i in train]
    if len(set(labels)) < 2:  # nothing to learn: every choice the model knows is equally likely
        known = set(labels)
        return [min(options, key=lambda c: (c not in known, c)) for options in choices]
    vectorizer = TfidfVectorizer(ngram_range=(1, 2))
    features = vectorizer.fit_transform([texts[i] for i in train])
    model = LogisticRegression(solver="newton-cg", max_iter=1000, random_state=0)  # lbfgs: 1.5x slower here
    with threadpool_limits(1):  # BLAS threads only contend on problems this small (6x slower measured)
        model.fit(features, labels)
        probabilities = model.predict_proba(vectorizer.transform([texts[i] for i in test]))
    column = {c: j for j, c in enumerate(model.classes_)}
    return [
        min(options, key=lambda c, row=row: (-(row[column[c]] if c in column else 0.0), c))
        for options, row in zip(choices, probabilities)
    ]


def anchored_values(questions: pa.Table) -> list[list[tuple[tuple, str]]]:
    """Per record, ``(anchor coordinates, value)`` of each answer group that has an anchor."""
    return [
        [(tuple(g["anchor"]), g["value"] or "") for g in groups or () if g["anchor"] is not None]
        for groups in questions["structured_answer"].to_pylist()
    ]


def coordinate_memory_answers(questions: pa.Table, setup: BlindSetup) -> list[str]:
    """A blind model that memorises coordinates: every anchor named in a train record (a grounded question's,
    an ungrounded answer's group labels) with the value its group had; a grounded test record is answered with
    the choice its anchor's coordinates were seen with most in train (ties: the smallest), any other test
    record as the majority model answers it. Above chance only where a record's coordinates and answer
    reach train through another record: a twin of it in another split."""
    anchored = anchored_values(questions)
    has_grounded = "grounded" in questions.column_names  # a table without it names no coordinates in questions
    grounded = [bool(g) for g in questions["grounded"].to_pylist()] if has_grounded else [False] * questions.num_rows
    memory: dict[tuple, Counter] = defaultdict(Counter)
    for i in setup.train:
        for anchor, value in anchored[i]:
            memory[anchor][value] += 1
    fallback = majority_answers(setup.keys, setup.contents, setup.test)
    out = []
    for i, choices, default in zip(setup.test, setup.choices, fallback):
        seen = memory.get(anchored[i][0][0]) if grounded[i] and anchored[i] else None
        known = [c for c in choices if seen and seen[c]]
        out.append(min(known, key=lambda c: (-seen[c], c)) if known else default)
    return out


def paraphrased_texts(questions: pa.Table) -> list[str]:
    """The validated-or-not paraphrase of each record where there is one, else its template text."""
    templates = questions["question"].to_pylist()
    if "paraphrase" not in questions.column_names:
        return templates
    paraphrases = questions["paraphrase"].combine_chunks().field("question").to_pylist()
    return [p or t for p, t in zip(paraphrases, templates)]


def template_texts(questions: pa.Table) -> list[str]:
    return questions["question"].to_pylist()


# The blind text models: each reads one text of every record.
TEXT_MODELS: dict[str, Callable[[pa.Table], list[str]]] = {
    "tfidf_question": template_texts,
    "tfidf_paraphrase": paraphrased_texts,
}
# A text model's answers to one query type's test records (in test order), by (model, query type).
TextAnswers = Mapping[tuple[str, str], list[str]]
# The arguments of text_model_answers for one fit: texts, contents, choices, train rows, test rows.
TextModelInputs = tuple[list[str], list[str], list[list[str]], np.ndarray, np.ndarray]


@dataclass(frozen=True)
class BlindSetup:
    """What every blind model shares: the train and test records (row indices, in question-id order, so any
    row order gives the same fits), each record's balance key, content and query type, and per test record
    its choices (the distinct contents of its group), its chance (1/choices) and its true content."""

    train: np.ndarray
    test: np.ndarray
    keys: list[str]
    contents: Sequence[str]
    query_types: list[str]
    choices: list[list[str]]
    chance: np.ndarray
    truth: list[str]

    @property
    def test_types(self) -> list[str]:
        return [self.query_types[i] for i in self.test]

    def test_rows_of(self, query: str) -> list[int]:
        """Positions in ``test`` of the records of one query type."""
        return [r for r, i in enumerate(self.test) if self.query_types[i] == query]


def blind_setup(questions: pa.Table, contents: Sequence[str]) -> BlindSetup:
    order = np.argsort(np.array(questions["question_id"].to_pylist(), dtype=object), kind="stable")
    splits = np.array(questions["split"].to_pylist(), dtype=object)[order]
    train, test = order[splits == "train"], order[splits == "test"]
    keys = questions["balance_key"].to_pylist()
    options = group_contents(keys, contents)
    choices = [options[keys[i]] for i in test]
    chance = np.array([1.0 / len(c) for c in choices])
    query_types = questions["query_type"].to_pylist()
    return BlindSetup(train, test, keys, contents, query_types, choices, chance, [contents[i] for i in test])


def text_model_fits(questions: pa.Table, setup: BlindSetup) -> dict[tuple[str, str], TextModelInputs]:
    """Every fit the blind text models need, by (model, query type), the most train records first: one text
    model fitted on one query type's train records and asked its test records (the question's words tell its
    query type anyway, and the separate fits are several times cheaper than one over every content, and can
    run side by side). Each holds only the rows it reads (its train records', then its test records'), so
    it is small enough to send to a worker."""
    texts = {model: read_texts(questions) for model, read_texts in TEXT_MODELS.items()}
    fits = {}
    for query in blind_queries(setup):
        rows = setup.test_rows_of(query)
        fit_on = [int(i) for i in setup.train if setup.query_types[i] == query]
        used = [*fit_on, *(int(setup.test[r]) for r in rows)]
        train, test = np.arange(len(fit_on)), np.arange(len(fit_on), len(used))
        for model in TEXT_MODELS:
            fits[model, query] = ([texts[model][i] for i in used], [setup.contents[i] for i in used],
                                  [setup.choices[r] for r in rows], train, test)  # fmt: skip
    return dict(sorted(fits.items(), key=lambda kv: -len(kv[1][3])))


def blind_queries(setup: BlindSetup) -> list[str]:
    """The query types of the test records: one text-model fit each."""
    return sorted(set(setup.test_types))


def text_model_all_answers(setup: BlindSetup, model: str, answers: TextAnswers) -> list[str]:
    """A text model's answer to every test record, from its answers per query type."""
    out: list[str] = [""] * len(setup.test)
    for query in blind_queries(setup):
        for r, answer in zip(setup.test_rows_of(query), answers[model, query]):
            out[r] = answer
    return out


def chance_test(hits: int, n: int, chance: float) -> float:
    """The p-value of an exact two-sided binomial test of ``hits`` in ``n`` against the chance level (the
    records' mean chance: their hits are independent Bernoulli draws, whose count varies no more than a
    binomial count at the mean, so the test is, if anything, conservative)."""
    return float(binomtest(hits, n, min(max(chance, 0.0), 1.0)).pvalue) if n else 1.0


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values: the i-th smallest p (i from 0) times (m - i), made non-decreasing, capped at
    1. Rejecting where the adjusted value is at most alpha keeps the chance of any false rejection among all
    m tests at most alpha."""
    order = np.argsort(np.asarray(p_values, dtype=float), kind="stable")
    adjusted, running = [1.0] * len(order), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * float(p_values[i])))
        adjusted[i] = running
    return adjusted


def accuracy_against_chance(
    answers: Sequence[str],
    truth: Sequence[str],
    chance: np.ndarray,
    query_types: Sequence[str],
    grounded: np.ndarray | None = None,
) -> dict[str, Any]:
    """Accuracy, chance and the binomial test's p-value overall, per query type and on the grounded records
    (where ``grounded`` marks some: their coordinates are what a memorising model could exploit). Overall
    also the 2-point rule (|accuracy - chance| <= BLIND_TOLERANCE), judged where 2 points are at least
    TOLERANCE_STANDARD_ERRORS standard errors of a guesser at chance on these records (None below)."""
    hits = np.array([a == t for a, t in zip(answers, truth)], dtype=bool)
    types = np.array(query_types, dtype=object)

    def tested(mask: np.ndarray) -> dict[str, Any]:
        n, k = int(mask.sum()), int(hits[mask].sum())
        level = float(chance[mask].mean())
        # the standard error of a guesser at chance on these records: how far chance alone strays
        se = float(np.sqrt((chance[mask] * (1 - chance[mask])).sum()) / n)
        return {"n": n, "hits": k, "accuracy": round(k / n, 6), "chance": round(level, 6), "se": round(se, 6),
                "p_value": round(chance_test(k, n, level), 6)}  # fmt: skip

    overall = tested(np.ones(len(hits), bool))
    meaningful = TOLERANCE_STANDARD_ERRORS * overall["se"] <= BLIND_TOLERANCE
    within = abs(overall["accuracy"] - overall["chance"]) <= BLIND_TOLERANCE + 1e-9
    overall["within_2_points"] = within if meaningful else None
    per_type = {q: tested(types == q) for q in sorted(set(query_types))}
    result = {"overall": overall, "per_query_type": per_type}
    if grounded is not None and grounded.any():
        result["grounded"] = tested(grounded)
    return result


def blind_scopes(result: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """One model's tests: overall, per query type and on the grounded records (where tested)."""
    grounded = [("grounded", result["grounded"])] if "grounded" in result else []
    return [("overall", result["overall"]), *result["per_query_type"].items(), *grounded]


def judge_blind(measured: dict[str, dict[str, Any]]) -> list[str]:
    """Holm over every test of ``measured`` (each model overall, per query type and on the grounded
    records): sets each test's ``p_holm`` and ``ok`` in place and returns what was missed, one phrase each."""
    tests = [(m, scope, r) for m, result in measured.items() for scope, r in blind_scopes(result)]
    missed = []
    for (model, scope, r), adjusted in zip(tests, holm([r["p_value"] for _, _, r in tests])):
        r["p_holm"] = round(adjusted, 6)
        r["ok"] = bool(adjusted > ALPHA and r.get("within_2_points") is not False)
        if adjusted <= ALPHA:
            missed.append(f"{model} {scope} {r['accuracy']:.3f} vs chance {r['chance']:.3f} "
                          f"({r['hits']} of {r['n']}, Holm p {adjusted:.4f})")  # fmt: skip
        elif r.get("within_2_points") is False:
            missed.append(f"{model} overall {r['accuracy']:.3f} more than {BLIND_TOLERANCE} from chance "
                          f"{r['chance']:.3f} ({r['n']} records)")  # fmt: skip
    return missed


BLIND_TEST = (
    f"exact two-sided binomial test of each model's hits against chance, overall, per query type and on "
    f"the grounded records, Holm-corrected over all of them: none rejects at {ALPHA}; "
    f"overall |accuracy - chance| <= {BLIND_TOLERANCE} "
    f"where {BLIND_TOLERANCE} is at least {TOLERANCE_STANDARD_ERRORS:g} standard errors at chance"
)


def grounded_test_records(questions: pa.Table, setup: BlindSetup) -> np.ndarray | None:
    """Per test record (in ``setup.test`` order) whether it is grounded; None where the table does not say."""
    if "grounded" not in questions.column_names:
        return None
    grounded = np.asarray(pc.fill_null(questions["grounded"], False).to_pylist(), dtype=bool)
    return grounded[setup.test]


def blind_baselines(
    questions: pa.Table, contents: Sequence[str] | None = None, text_answers: TextAnswers | None = None
) -> Criterion:
    """Blind models on test against chance (the mean over test records of 1/k, k: the distinct contents of
    the record's balance group): the majority content per question, and the TF-IDF text model on the
    template and on the paraphrased text. ``text_answers``: the text models' answers where they were fitted
    elsewhere (:func:`text_model_fits`, one unit per model and query type); fitted here if None."""
    name, target = "blind_baselines", "accuracy at chance, overall, per query type and on grounded records"
    contents = answer_contents(questions) if contents is None else contents
    setup = blind_setup(questions, contents)
    if len(setup.test) == 0:
        return not_applicable(name, target, "no test records")
    if text_answers is None:
        text_answers = {key: text_model_answers(*fit) for key, fit in text_model_fits(questions, setup).items()}
    models = {
        "majority": majority_answers(setup.keys, contents, setup.test),
        **{m: text_model_all_answers(setup, m, text_answers) for m in TEXT_MODELS},
        "coordinate_memory": coordinate_memory_answers(questions, setup),
    }
    chance = setup.chance
    grounded = grounded_test_records(questions, setup)
    measured = {
        m: accuracy_against_chance(a, setup.truth, chance, setup.test_types, grounded) for m, a in models.items()
    }
    missed = judge_blind(measured)
    n_tests = sum(len(blind_scopes(r)) for r in measured.values())
    lowest = min(r["p_holm"] for m in measured.values() for _, r in blind_scopes(m))
    two_points = next(iter(measured.values()))["overall"]["within_2_points"]
    rule = "judged" if two_points is not None else f"not judged: {len(setup.test)} test records are too few"
    overall = ", ".join(f"{m} {r['overall']['accuracy']:.3f}" for m, r in measured.items())
    detail = (f"{len(setup.test)} test records, chance {chance.mean():.3f}: {overall}; {n_tests} tests, "
              f"smallest Holm p {lowest:.3f}; 2-point rule {rule}")  # fmt: skip
    detail += f" (missed: {'; '.join(missed)})" if missed else ""
    return Criterion(name, not missed, measured, target, detail, BLIND_TEST)


# -- all of them -----------------------------------------------------------------------------------------
def method_criteria(
    questions: pa.Table,
    config: Mapping[str, Any] | None = None,
    text_answers: TextAnswers | None = None,
    contents: Sequence[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Every criterion, by name, as stats.json holds them: ``{ok, measured, target, detail}`` (``text_answers``:
    the blind text models' answers where they were fitted elsewhere; ``contents``: the records'
    :func:`answer_contents` where already made)."""
    missing = [c for c in CRITERIA_COLUMNS if c not in questions.column_names and c not in OPTIONAL_COLUMNS]
    if missing:
        raise DataFileError("questions table", missing[0], "missing: the method criteria need it", REGENERATE)
    targets = MethodTargets.from_config(config, questions)
    contents = answer_contents(questions) if contents is None else contents
    results = [
        unseen_share(questions, targets),
        content_balance(questions, contents),
        mix(questions, targets),
        blind_baselines(questions, contents, text_answers),
    ]
    return {r.name: {k: v for k, v in asdict(r).items() if k != "name"} for r in results}
