"""The shared language of eqagen: episodes, timelines, frames, question records, seeded randomness."""

from eqagen.core.episode import (
    FAMILIES,
    Entities,
    Episode,
    Event,
    Region,
    Steps,
    make_episode_id,
    number_events,
)
from eqagen.core.errors import ConfigError, DataFileError, EqagenError, RunFailed, TaskError, UnknownNameError
from eqagen.core.frame import FrameTransform, heading_vector, to_egocentric
from eqagen.core.records import (
    EXPRESS_CATEGORIES,
    OPENEQA_CATEGORIES,
    SPLITS,
    AnswerGroup,
    FilterSpec,
    Paraphrase,
    Program,
    QARecord,
    QuerySpec,
    ResultItem,
    split_name,
)
from eqagen.core.rng import Draws, derive_rng, derive_seed, stable_hash, stable_int
from eqagen.core.timeline import FieldChanges, Timeline, TimelineRecorder

__all__ = [
    "EXPRESS_CATEGORIES",
    "FAMILIES",
    "OPENEQA_CATEGORIES",
    "SPLITS",
    "AnswerGroup",
    "ConfigError",
    "DataFileError",
    "Draws",
    "Entities",
    "Episode",
    "EqagenError",
    "Event",
    "FieldChanges",
    "FilterSpec",
    "FrameTransform",
    "Paraphrase",
    "Program",
    "QARecord",
    "QuerySpec",
    "Region",
    "ResultItem",
    "RunFailed",
    "Steps",
    "TaskError",
    "Timeline",
    "TimelineRecorder",
    "UnknownNameError",
    "derive_rng",
    "derive_seed",
    "heading_vector",
    "make_episode_id",
    "number_events",
    "split_name",
    "stable_hash",
    "stable_int",
    "to_egocentric",
]
