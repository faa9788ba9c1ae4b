"""Mutation run: plant named regressions in the method's rules, one at a time, and check that a test fails.

Each mutant (:data:`MUTANTS`) names a rule of the method (a rejection reason, a validity rule, the balance or
answer key, a registry entry, the held-out partition, ...), the function that defines it (module and name),
the exact text to change there and the test files that guard it. The run copies the package and its tests to
a scratch folder, checks that the tests pass there unchanged (the baseline), then for each mutant edits the
copy, runs its tests (``pytest -x``), restores the file and reports ``killed`` (a test failed) or ``survived``
(every test passed: a missing test). A mutant whose function or text is not where the list says is reported
``moved``, naming what to update, rather than silently skipped.

    python benchmarks/mutate.py                 # every mutant (6 to 12 minutes on a shared 2-core host)
    python benchmarks/mutate.py --list          # the mutants and what each plants
    python benchmarks/mutate.py balance-key-names-scene answer-key-counts-groups
    python benchmarks/mutate.py --json out.json --keep /tmp/mutants

Exit status 0 only when every mutant was killed. The library is never edited: only the scratch copy is, and
it is imported first (``PYTHONPATH``, no bytecode written, so a restored file is never shadowed by a stale
``.pyc`` of its mutant). Standard library only. The results and how they were run: docs/testing.md.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COPIED = ("eqagen", "tests", "benchmarks", "docs", "README.md", "pyproject.toml")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis", "*.egg-info")
TIMEOUT_S = 1200  # per mutant: a mutant that makes its tests hang this long counts as killed (timeout)

SAMPLER_TESTS = ("tests/predicates/test_rejections.py", "tests/predicates/test_sampler.py")
VALIDITY_TESTS = ("tests/predicates/test_rejections.py", "tests/predicates/test_validity.py")
TEXT_TESTS = ("tests/predicates/test_sampler.py", "tests/templates/test_text.py")
BALANCE_TESTS = ("tests/curation/test_balance.py", "tests/curation/test_curation_properties.py")
SPLIT_TESTS = ("tests/curation/test_splits.py", "tests/curation/test_curation_properties.py")
REAL_RUN = "tests/test_cli.py::test_a_real_run_holds_half_of_val_and_test_out_of_train_and_balances_on_content"
BALANCE_KEY_RUN = "tests/test_cli.py::test_balance_keys_are_the_programs_text_in_every_scene_and_never_name_one"


@dataclass(frozen=True)
class Mutant:
    """One planted regression: in ``module``'s definition of ``target`` (a function, a class's ``Class.method``
    or a module-level name; None: anywhere in the module), each ``(old, new)`` edit replaces text found there
    exactly once."""

    name: str
    plants: str  # what the mutant breaks, in the method's words
    module: str
    target: str | None
    edits: tuple[tuple[str, str], ...]
    tests: tuple[str, ...]


def mutant(name: str, plants: str, where: str, edits: list[tuple[str, str]], tests: tuple[str, ...]) -> Mutant:
    """A mutant at ``where`` ("package.module:name", or "package.module" for anywhere in the module)."""
    module, _, target = where.partition(":")
    return Mutant(name, plants, module, target or None, tuple(edits), tuple(tests))


MUTANTS: tuple[Mutant, ...] = (
    # -- rejection reasons ---------------------------------------------------------------------------------
    mutant("reason-forbidden-pair-relabelled", "a forbidden filter/query pair is counted as a duplicate",
           "eqagen.predicates.sampler:check", [('return "forbidden_pair"', 'return "duplicate"')], SAMPLER_TESTS),
    mutant("reason-counted-as-duplicate", "every rejection is counted as 'duplicate', whatever its check said",
           "eqagen.predicates.sampler:sample_programs", [("rejections[verdict] += 1", 'rejections["duplicate"] += 1')],
           SAMPLER_TESTS),
    mutant("reason-targets-as-items", "too many objects to describe is reported as too long a list",
           "eqagen.predicates.sampler:answer_problem", [('return "too_many_targets"', 'return "too_many_items"')],
           SAMPLER_TESTS),
    mutant("reason-rule-relabelled", "the trivial-answer rule rejects under another rule's name",
           "eqagen.predicates.validity:RULES",
           [('"trivial_answer": trivial_answer', '"ineffective_filter": trivial_answer')], VALIDITY_TESTS),
    # -- validity rules ------------------------------------------------------------------------------------
    mutant("rule-ineffective-on-single-filters", "one-filter questions are judged 'ineffective', shadowing "
           "'same_as_unfiltered'", "eqagen.predicates.validity:ineffective_filter",
           [("len(q.program.filters) > 1", "len(q.program.filters) >= 1")], VALIDITY_TESTS),
    mutant("rule-constant-property-dropped", "a getProperty question whose type has one value is accepted",
           "eqagen.predicates.validity:RULES", [('    "constant_property": constant_property,\n', "")], VALIDITY_TESTS),
    mutant("rule-event-gives-away-flipped", "the event rule judges every query but getState",
           "eqagen.predicates.validity:answer_given_by_event", [('!= "getState"', '== "getState"')], VALIDITY_TESTS),
    mutant("rule-indefinite-ignores-opposite", "an object also seen in the opposite relation at an admitted "
           "moment passes", "eqagen.predicates.validity:indefinite_moment",
           [("if against is not None and", "if False and")], VALIDITY_TESTS),
    mutant("content-ignores-repeats", "'two cups' reads as 'a cup' to the effectiveness check",
           "eqagen.predicates.validity:content_of",
           [('tuple(sorted(value.split(", ")))', 'tuple(sorted(set(value.split(", "))))')], VALIDITY_TESTS),
    # -- registry ------------------------------------------------------------------------------------------
    mutant("registry-forbidden-pair-dropped", "location filters may go with getLocation (the filter gives the "
           "answer away)", "eqagen.predicates.builtin", [('forbid_pair("location", "*", "getLocation", "*")\n', "")],
           (*SAMPLER_TESTS, "tests/predicates/test_registry.py")),
    mutant("registry-filter-dropped", "the household world loses the utility filter",
           "eqagen.predicates.household",
           [('"property": ("color", "material", "utility"),', '"property": ("color", "material"),')],
           ("tests/predicates/test_registry.py", "tests/predicates/test_distribution.py", *TEXT_TESTS)),
    mutant("registry-query-dropped", "the household world loses the getLocation query",
           "eqagen.predicates.household", [('        "getLocation": None,\n', "")],
           ("tests/predicates/test_registry.py", "tests/predicates/test_distribution.py", *TEXT_TESTS)),
    mutant("registry-backends-swapped", "the embedded and world-file Minecraft backends swap names",
           "eqagen.generators.blockworld.backend",
           [('@register_backend("blockworld", "embedded")', '@register_backend("blockworld", "WORLD-FILE")'),
            ('@register_backend("blockworld", "world-file")', '@register_backend("blockworld", "embedded")'),
            ('@register_backend("blockworld", "WORLD-FILE")', '@register_backend("blockworld", "world-file")')],
           ("tests/generators/blockworld",)),
    # -- question text and keys ----------------------------------------------------------------------------
    mutant("balance-key-names-scene", "the balance key names the scene it was asked in",
           "eqagen.templates.records:make_records",
           [("balance_key=question,", 'balance_key=f"{question} ({ep.scene_id})",')], (*TEXT_TESTS, BALANCE_KEY_RUN)),
    mutant("question-names-scene", "the question (and so its key) names its scene",
           "eqagen.templates.records:make_records",
           [("question = question_text(program, wording)\n",
             'question = question_text(program, wording) + f" in {ep.scene_id}"\n')],
           (*TEXT_TESTS, BALANCE_KEY_RUN)),
    mutant("grounded-key-keeps-coordinates", "a grounded question's key keeps its coordinates (never recurs)",
           "eqagen.templates.records:grounded_balance_key",
           [("return question.replace(coords(anchor), ANCHOR_PLACEHOLDER)", "return question")],
           (*TEXT_TESTS, BALANCE_KEY_RUN)),
    mutant("answer-key-counts-groups", "the content answer key counts repeats of a value over anchor groups",
           "eqagen.templates.records:answer_key", [("sorted(set(values))", "sorted(values)")],
           ("tests/templates", "tests/predicates/test_sampler.py")),
    # -- balancing, partition, splits ----------------------------------------------------------------------
    mutant("balance-keeps-single-answer", "a question with one answer content is kept",
           "eqagen.curation.balance:choose_answer_counts",
           [("(tallies.rank >= config.min_answers)", "(tallies.rank >= 1)")], BALANCE_TESTS),
    mutant("balance-no-dedup-in-scene", "a question keeps several records of one scene",
           "eqagen.curation.balance:scene_representatives",
           [("mask[order[run_starts(pair[order])]] = True", "mask[:] = True")], BALANCE_TESTS),
    mutant("balance-mixes-partitions", "a question is balanced over held-out and seen scenes together",
           "eqagen.curation.balance:encode_table", [("if HELD_OUT in table.column_names:", "if False:")],
           (*BALANCE_TESTS, REAL_RUN)),
    mutant("held-out-partition-empty", "no scene is held out of train",
           "eqagen.curation.partition:held_out_scenes",
           [("return {scenes[i] for i in order[:n]}", "return set()")],
           ("tests/curation/test_criteria.py", *SPLIT_TESTS, REAL_RUN)),
    mutant("split-ignores-held-out", "held-out scenes' groups may go to train",
           "eqagen.curation.splits:split_by_partition",
           [("forced[units.of_row[held_row]] = True", "forced[units.of_row[held_row]] = False")],
           (*SPLIT_TESTS, REAL_RUN)),
    mutant("split-breaks-balance-groups", "the records of one balance group are split one by one",
           "eqagen.curation.splits:assign_splits",
           [('group, _ = encode(table.column("balance_key"))', "group = np.arange(table.num_rows)")],
           (*SPLIT_TESTS, REAL_RUN)),
    mutant("ask-crosses-partition", "a seen scene's question is asked in held-out scenes",
           "eqagen.flows.ask:target_order",
           [(" & (vocab.held_out == vocab.held_out[proposal.episode])", "")], ("tests/flows/test_ask.py", REAL_RUN)),
    mutant("ask-in-proposing-scene", "a question is asked again in a scene that proposed it",
           "eqagen.flows.ask:target_order", [("ok & ~proposed_here[vocab.scene]", "ok")], ("tests/flows/test_ask.py",)),
    # -- paraphrase ----------------------------------------------------------------------------------------
    mutant("paraphrase-accepts-added-text", "a paraphrase that adds links, markup or instructions is accepted",
           "eqagen.paraphrase.validator:SIDE_CHECKS", [(", text_added)", ")")],
           ("tests/paraphrase/test_validator.py", "tests/paraphrase/test_validator_faults.py")),
)  # fmt: skip


class Moved(Exception):
    """A mutant's target is not where the list says (another change moved or rewrote it)."""


@dataclass
class Result:
    name: str
    status: str  # killed, survived, moved, timeout (killed), no-tests
    seconds: float
    caught_by: str = ""
    detail: str = ""
    tests: list[str] = field(default_factory=list)


# -- finding the target ------------------------------------------------------------------------------------
def module_path(root: Path, module: str) -> Path:
    base = root.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    raise Moved(f"module {module} not found (looked for {base.relative_to(root)}.py): update its `where`")


def defined_names(node: ast.AST) -> list[str]:
    """The names a module-level or class-level statement defines."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def target_span(source: str, target: str, module: str) -> tuple[int, int]:
    """Character offsets of ``target``'s definition (with its decorators) in ``source``."""
    body: list[ast.stmt] = ast.parse(source).body
    node: ast.stmt | None = None
    for part in target.split("."):
        node = next((n for n in body if part in defined_names(n)), None)
        if node is None:
            raise Moved(f"{module} defines no {target!r} (was it moved? grep -rn '{part}' eqagen/): update its `where`")
        body = getattr(node, "body", [])
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts[first - 1], starts[node.end_lineno]


def mutated_source(source: str, m: Mutant) -> str:
    """``source`` with the mutant's edits applied inside its target, each found there exactly once."""
    start, end = (0, len(source)) if m.target is None else target_span(source, m.target, m.module)
    part = source[start:end]
    where = f"{m.module}:{m.target}" if m.target else m.module
    for old, new in m.edits:
        found = part.count(old)
        if found != 1:
            raise Moved(f"{where}: the text to change is there {found} times, not once: {old!r}")
        part = part.replace(old, new)
    return source[:start] + part + source[end:]


# -- running -----------------------------------------------------------------------------------------------
def scratch_copy(dest: Path) -> Path:
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=IGNORED)
        elif src.exists():
            shutil.copy2(src, dest / name)
    return dest


def scratch_env(scratch: Path) -> dict[str, str]:
    """The scratch copy first on the path (ahead of an editable install), and no bytecode written."""
    path = os.pathsep.join(p for p in (str(scratch), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}


def check_imports_scratch(scratch: Path) -> None:
    probe = [sys.executable, "-c", "import eqagen; print(eqagen.__file__)"]
    out = subprocess.run(probe, cwd=scratch, env=scratch_env(scratch), capture_output=True, text=True, check=True)
    if not Path(out.stdout.strip()).resolve().is_relative_to(scratch.resolve()):
        sys.exit(f"mutate: eqagen imports from {out.stdout.strip()}, not the scratch copy {scratch}")


def run_tests(scratch: Path, tests: tuple[str, ...]) -> tuple[int | None, str, float]:
    """(pytest's exit status, None on timeout; its output; seconds)."""
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, cwd=scratch, env=scratch_env(scratch), capture_output=True, text=True,
                              timeout=TIMEOUT_S, check=False)  # fmt: skip
    except subprocess.TimeoutExpired as e:
        return None, str(e.stdout or ""), time.perf_counter() - t0
    return done.returncode, done.stdout + done.stderr, time.perf_counter() - t0


def first_failure(output: str) -> str:
    """The test that failed (pytest's summary line), or the last line of the output."""
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" - ")[0].split(" ", 1)[1]
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def run_mutant(scratch: Path, m: Mutant) -> Result:
    try:
        path = module_path(scratch, m.module)
        original = path.read_text()
        changed = mutated_source(original, m)
    except Moved as e:
        return Result(m.name, "moved", 0.0, detail=str(e), tests=list(m.tests))
    path.write_text(changed)
    try:
        rc, output, seconds = run_tests(scratch, m.tests)
    finally:
        path.write_text(original)
    status = {None: "timeout", 0: "survived", 1: "killed", 2: "killed", 5: "no-tests"}.get(rc, "killed")
    caught = "" if status in ("survived", "no-tests") else first_failure(output)
    return Result(m.name, status, round(seconds, 1), caught, "" if rc in (0, 1) else output[-2000:], list(m.tests))


def baseline(scratch: Path, mutants: list[Mutant]) -> None:
    """Every selected test passes on the unchanged copy (else a failure would pass for a kill)."""
    tests = tuple(dict.fromkeys(t for m in mutants for t in m.tests))
    rc, output, seconds = run_tests(scratch, tests)
    print(f"baseline: {len(tests)} test selections, {seconds:.0f} s, pytest exit {rc}", flush=True)
    if rc != 0:
        sys.exit(f"mutate: the tests fail without any mutant; fix them first:\n{output[-3000:]}")


def report(results: list[Result]) -> None:
    width = max(len(r.name) for r in results)
    for r in results:
        print(f"{r.name:<{width}}  {r.status:<8}  {r.seconds:7.1f} s  {r.caught_by or r.detail}")
    killed = sum(r.status in ("killed", "timeout") for r in results)
    print(f"{killed} of {len(results)} mutants killed")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", help="run only these mutants (default: all)")
    p.add_argument("--list", action="store_true", help="list the mutants and exit")
    p.add_argument("--no-baseline", action="store_true", help="skip the run of the tests without a mutant")
    p.add_argument("--keep", type=Path, help="make the scratch copy here (kept); default: a temporary folder")
    p.add_argument("--json", type=Path, help="also write the results here")
    return p.parse_args(argv)


def list_mutants(mutants: list[Mutant]) -> int:
    """Each mutant, what it plants, and whether its target is where the list says in this tree."""
    moved = 0
    for m in mutants:
        try:
            mutated_source(module_path(ROOT, m.module).read_text(), m)
            found = "found"
        except Moved as e:
            found, moved = f"MOVED: {e}", moved + 1
        print(f"{m.name}: {m.plants}\n    {m.module}:{m.target or '*'} ({found})\n    tests: {' '.join(m.tests)}")
    return 1 if moved else 0


def fresh_folder(path: Path) -> None:
    """``--keep``'s folder: made, or emptied where an earlier run made it (never a folder of other files)."""
    marker = path / ".eqagen-mutants"
    if path.exists() and any(path.iterdir()) and not marker.exists():
        sys.exit(f"mutate: --keep {path} holds files this script did not make; name a new folder")
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    marker.touch()


def selected(names: list[str]) -> list[Mutant]:
    unknown = set(names) - {m.name for m in MUTANTS}
    if unknown:
        sys.exit(f"mutate: no mutant named {sorted(unknown)}; see --list")
    return [m for m in MUTANTS if not names or m.name in names]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    mutants = selected(args.names)
    if args.list:
        return list_mutants(mutants)
    with tempfile.TemporaryDirectory(prefix="eqagen-mutants-") as tmp:
        scratch = args.keep or Path(tmp)
        if args.keep:
            fresh_folder(args.keep)
        scratch_copy(scratch)
        check_imports_scratch(scratch)
        if not args.no_baseline:
            baseline(scratch, mutants)
        results = []
        for m in mutants:
            results.append(run_mutant(scratch, m))
            r = results[-1]
            print(f"{r.name}: {r.status} in {r.seconds:.1f} s {r.caught_by or r.detail}", flush=True)
    report(results)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n")
    return 0 if all(r.status in ("killed", "timeout") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
