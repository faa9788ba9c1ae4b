"""Why a FILM-mode episode failed, in the categories of FILM's error analysis (FILM paper, section 5.2).

FILM's authors sorted their failed valid_unseen episodes by cause: the goal object was not found, an
interaction failed, the agent collided, the object was in a closed receptacle, the language module
misread the instruction, or something else. Here each failed episode gets one of these from the trace
its mechanisms left (:class:`FailureTrace`), in a fixed order of precedence: a misread instruction
first (the agent then did the wrong task, whatever else happened), then an episode ended by too many
failed actions (collisions when most were blocked moves, else interactions), then a search still going
at the step limit (the object shut in a closed receptacle when every instance of it was, else not found),
and anything else as "other" (a time-out while approaching or acting, a plan the agent gave up, and a
search for a static type the floor plan has but the data give no position for: ALFRED's layouts list,
say, every floor plan's garbage can but place only some, so our scene has none to find; that is a gap in
our data, not a FILM failure, counted apart in ``sought_unplaced``). A type the floor plan does not have
(FILM's parse asks for a floor lamp in a room with desk lamps only), or a movable object this
trajectory's scene does not hold (ALFRED varies them per trajectory), is FILM's own: not found.
"""

from __future__ import annotations

from dataclasses import dataclass

FAILURE_MODES = (
    "goal_object_not_found",
    "interaction_failure",
    "collision",
    "object_in_closed_receptacle",
    "language_processing_error",
    "other",
)


@dataclass(frozen=True)
class FailureTrace:
    """What a failed episode's mechanisms left behind, as the agent and the judge recorded it."""

    parse_right: bool  # FILM's parse names the task (the true one on valid, the annotations' majority on test)
    stop_reason: str  # success | max_steps | max_failures | plan_finished (the agent's own stop)
    phase: str  # what the agent was doing at the stop: search | approach | interact | start
    sought_enclosed: bool  # searching, and every instance of the sought type was shut in a closed receptacle
    sought_unplaced: bool  # searching for a type the floor plan has but the data do not place
    collisions: int
    interaction_failures: int


def failure_mode(t: FailureTrace) -> str:
    """The one FILM error category of a failed episode (see the module docstring for the order)."""
    if not t.parse_right:
        return "language_processing_error"
    if t.stop_reason == "max_failures":
        return "collision" if t.collisions > t.interaction_failures else "interaction_failure"
    if t.phase == "search" and t.stop_reason == "max_steps" and not t.sought_unplaced:
        return "object_in_closed_receptacle" if t.sought_enclosed else "goal_object_not_found"
    return "other"
