"""Between question tables (pyarrow, the shape of ``QARecord.to_dict``) and ``QARecord`` objects."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

import pyarrow as pa

from eqagen.core.errors import DataFileError
from eqagen.core.records import Paraphrase, QARecord

# The ``paraphrase`` column of the questions table (``outputs.schemas`` uses this one definition).
PARAPHRASE_TYPE = pa.struct(
    [
        ("question", pa.string()),
        ("answer", pa.string()),
        ("model", pa.string()),  # "offline", the chat model that answered, or "" when none did
        ("validated", pa.bool_()),
        ("attempts", pa.int32()),  # rewrites checked: the model's replies, or offline variants tried
        ("reason", pa.string()),  # why the template text was kept; "" when validated
    ]
)
# The columns a record is rebuilt from (the others read as empty where absent).
RECORD_COLUMNS = ("episode_id", "program", "structured_answer", "answer_type", "question", "answer")


def records_from_table(table: pa.Table) -> list[QARecord]:
    """The records of a questions table (:meth:`QARecord.from_dict`, the one row codec)."""
    missing = [name for name in RECORD_COLUMNS if name not in table.column_names]
    if missing:
        raise DataFileError("questions table", missing[0], "column missing", "paraphrase needs a questions table")
    return [QARecord.from_dict(row) for row in table.to_pylist()]


def paraphrase_array(paraphrases: Sequence[Paraphrase]) -> pa.StructArray:
    """The ``paraphrase`` column (:data:`PARAPHRASE_TYPE`)."""
    rows = [asdict(p) for p in paraphrases]
    return pa.array(rows, type=PARAPHRASE_TYPE)
