"""Pausing Python's cyclic garbage collector around a unit of work that makes no cycles.

The question engine builds, per episode, tens of thousands of small containers (its index's memos, the
proposals' lists and tuples) that all die, by reference counting, when the episode is done: none is part
of a reference cycle (a whole episode leaves about six cyclic objects, the first one's compiled
templates). The cyclic collector still walks them again and again while they live, and walks everything
else alive in the process with them (the imported modules, a batch's episodes): about 5% of the engine's
time (docs/questions.md, "Speed"). Paused for the episode, it walks none of it; what little cyclic garbage
there is waits for its next pass after the pause.

The pause is counted, so nested and concurrent pauses (threads of one process) end only when the last one
does, and it restores the collector only if it found it enabled.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_LOCK = threading.Lock()
_STATE = {"depth": 0, "was_enabled": False}


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the body with the cyclic garbage collector disabled (reference counting frees memory as usual)."""
    with _LOCK:
        if _STATE["depth"] == 0:
            _STATE["was_enabled"] = gc.isenabled()
            gc.disable()
        _STATE["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _STATE["depth"] -= 1
            if _STATE["depth"] == 0 and _STATE["was_enabled"]:
                gc.enable()
