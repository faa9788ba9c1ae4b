"""The paraphrase stage of ``eqagen generate``: ``paraphrase_table(table, section, seed) -> (table, stats)``.

The pipeline runs it on the whole questions table; it replaces the ``paraphrase`` column and keeps
every row and every other column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from eqagen.core.errors import ConfigError
from eqagen.core.records import QARecord
from eqagen.paraphrase.config import ParaphraseConfig
from eqagen.paraphrase.runner import paraphrase_records
from eqagen.paraphrase.tables import paraphrase_array, records_from_table


def as_config(section: Any) -> ParaphraseConfig:
    """The stage's config from a model, a mapping (an unvalidated section) or None (defaults)."""
    if section is None:
        return ParaphraseConfig()
    if isinstance(section, ParaphraseConfig):
        return section
    if isinstance(section, Mapping):
        return ParaphraseConfig(**section)
    raise ConfigError("paraphrase", f"expected a mapping, got {type(section).__name__}")


def with_paraphrases(table: pa.Table, column: pa.Array) -> pa.Table:
    index = table.schema.get_field_index("paraphrase")
    if index < 0:
        return table.append_column("paraphrase", column)
    field = table.schema.field(index)
    return table.set_column(index, field, column.cast(field.type))


def paraphrase_table(
    table: pa.Table, section: Any, seed: int, examples: Sequence[QARecord] | None = None
) -> tuple[pa.Table, dict[str, Any]]:
    """Paraphrase every row of a questions table (stats: counts, requests, tokens, cost, rejections)."""
    config = as_config(section)
    records = records_from_table(table)
    result = paraphrase_records(records, config, seed, examples=examples)
    return with_paraphrases(table, paraphrase_array(result.paraphrases)), result.stats
