"""The stage contract: declared columns checked around the run, a typed section, drops counted into the log."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from eqagen.core.stages import DatasetStage, StageLog


@dataclass(frozen=True)
class KeepEven:
    column: str = "n"


def keep_even(table: pa.Table, section: KeepEven, seed: int) -> tuple[pa.Table, dict]:
    even = pc.equal(pc.bit_wise_and(table[section.column], 1), 0)
    out = table.filter(even).append_column("half", pc.divide(table.filter(even)[section.column], 2))
    return out, {"rejected": {"odd": table.num_rows - out.num_rows}}


def drop_a_column(table: pa.Table, section: KeepEven, seed: int) -> tuple[pa.Table, dict]:
    return table.drop_columns(["tag"]).append_column("half", table["n"]), {}


STAGE = DatasetStage("even", keep_even, ("n",), ("half",), KeepEven)
TABLE = pa.table({"n": list(range(10)), "tag": ["x"] * 10})


def test_a_run_reports_rows_and_drops_by_reason_and_the_log_is_the_funnel():
    out, report = STAGE.run(TABLE, KeepEven(), seed=0)
    assert out.num_rows == 5 and out["half"].to_pylist() == [0, 1, 2, 3, 4]
    log = StageLog()
    log.record(report)
    assert log.funnel == {"even": {"in": 10, "out": 5, "rejected": {"odd": 5}}}
    assert log.stages["even"] == {"rejected": {"odd": 5}, "implementation": f"{__name__}:keep_even",
                                  "rows_in": 10, "rows_out": 5}  # fmt: skip


def test_a_table_without_what_the_stage_reads_is_refused_before_it_runs():
    with pytest.raises(ValueError, match=r"even stage reads columns \['n'\]"):
        STAGE.run(TABLE.drop_columns(["n"]).append_column("m", TABLE["n"]), KeepEven("m"), seed=0)


def test_a_stage_that_loses_a_column_it_was_given_is_an_error():
    losing = DatasetStage("even", drop_a_column, ("n",), ("half",), KeepEven)
    with pytest.raises(ValueError, match=r"keeps or writes columns \['tag'\]"):
        losing.run(TABLE, KeepEven(), seed=0)


def test_a_section_of_another_type_is_refused_not_coerced():
    with pytest.raises(TypeError, match="KeepEven"):
        STAGE.run(TABLE, {"column": "n"}, seed=0)


def test_a_derived_dataset_keeps_its_inputs_log_and_records_its_stage_over_it():
    log = StageLog.inherited({"funnel": {"even": {"in": 1, "out": 1, "rejected": {}}}, "stages": {"x": {}}})
    log.record(STAGE.run(TABLE, KeepEven(), seed=0)[1])
    assert log.funnel["even"]["out"] == 5 and "x" in log.stages
    assert StageLog.inherited({"funnel": [1], "stages": None}) == StageLog()
