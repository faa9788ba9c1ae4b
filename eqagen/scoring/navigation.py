"""EXPRESS-Bench's d_T: how far from the goal a prediction's final position ends, in metres.

``d_T = |p_final - p_goal|`` in the floor plane (x, z of the episode frame; y is up), ``p_goal`` the episode
task's ``goal_position`` (written in the scene's native frame, converted to the episode frame), or for an
episode without one the agent's last position.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from eqagen.core import Episode


def goal_position(episode: Episode) -> tuple[float, float, float]:
    """The episode's goal in the episode frame."""
    goal = episode.task.get("goal_position")
    if goal is None:
        x, y, z = episode.steps.pose[-1, :3].tolist()
        return float(x), float(y), float(z)
    x, y, z = episode.frame.to_episode(np.asarray([goal], dtype=np.float64))[0].tolist()
    return float(x), float(y), float(z)


def distance_to_goal(final: Sequence[float], goal: Sequence[float]) -> float:
    """``d_T = sqrt((x_f - x_g)^2 + (z_f - z_g)^2)``."""
    return math.hypot(final[0] - goal[0], final[2] - goal[2])
