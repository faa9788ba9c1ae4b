"""Count questions: exact accuracy, and VSI-Bench's mean relative accuracy (MRA).

``MRA = mean over θ in {0.50, 0.55, ..., 0.95} of 1[|ŷ - y| / y < 1 - θ]``: a count within 5% of the truth
scores 1, one off by 30% scores 0.5. VSI-Bench divides by the truth y; a true count of 0 (a count of events the
agent never did: "Never.") falls back to the exact comparison.
"""

from __future__ import annotations

import numpy as np

THRESHOLDS = np.round(np.arange(0.50, 0.951, 0.05), 2)


def count_exact(predicted: float | None, truth: float) -> float:
    """``1[ŷ = y]`` (no readable number: 0)."""
    return float(predicted is not None and predicted == truth)


def mean_relative_accuracy(predicted: float | None, truth: float) -> float:
    """``mean_θ 1[|ŷ - y| / y < 1 - θ]``, θ in 0.50..0.95 (no readable number: 0)."""
    if predicted is None:
        return 0.0
    if truth == 0:
        return float(predicted == 0)
    relative_error = abs(predicted - truth) / abs(truth)
    return float(np.mean(relative_error < 1 - THRESHOLDS))


def read_count(content: str) -> float | None:
    """The number a count answer's content says ("2"; several anchors saying different counts: None)."""
    try:
        return float(content)
    except ValueError:
        return None
