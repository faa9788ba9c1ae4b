"""Read a dataset folder back: Episode and QARecord objects rebuilt from the shards alone (the shards its
manifest lists, verified first: :mod:`eqagen.outputs.dataset`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from eqagen.core import Episode, QARecord, split_name
from eqagen.outputs.dataset import Dataset, open_dataset, read_shards
from eqagen.outputs.schemas import EPISODES_SCHEMA, QUESTIONS_SCHEMA, episode_dict, episode_rows
from eqagen.paraphrase.tables import records_from_table


def episode_from_row(row: dict[str, Any]) -> Episode:
    """Inverse of :func:`eqagen.outputs.schemas.episode_row`, on a row of ``to_pylist`` or of ``episode_rows``."""
    return Episode.from_dict(episode_dict(row))


DatasetSource = Path | str | Dataset


def as_dataset(source: DatasetSource) -> Dataset:
    """A dataset already opened, or a folder opened and verified now (:func:`open_dataset`)."""
    return source if isinstance(source, Dataset) else open_dataset(Path(source))


def iter_episodes(source: DatasetSource) -> Iterator[Episode]:
    """The episodes of a dataset folder (verified against its manifest first), shard by shard."""
    for path in as_dataset(source).shards("episodes"):
        for row in episode_rows(read_shards([path], EPISODES_SCHEMA)):
            yield episode_from_row(row)


def read_episodes(source: DatasetSource) -> dict[str, Episode]:
    """Every episode of a dataset folder, by id."""
    return {ep.episode_id: ep for ep in iter_episodes(source)}


def read_questions(source: DatasetSource, split: str | None = None) -> list[QARecord]:
    """The questions of a dataset folder (verified against its manifest first), all or one split's."""
    table = read_shards(as_dataset(source).shards("questions"), QUESTIONS_SCHEMA)
    if split is not None:
        table = table.filter(pc.equal(table["split"], split_name(split)))
    return records_from_table(table)
