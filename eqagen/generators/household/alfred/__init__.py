"""ALFRED on the real AI2-THOR floor plans: readers, scene building, expert replay, FILM mode, scene catalog.

Importing this package registers the ``household/alfred`` world backend (:mod:`.backend`). Modules:
:mod:`.reader` (``traj_data.json`` and layouts), :mod:`.scene_build` (a household scene from them),
:mod:`.ids` (ALFRED objectIds onto the world's), :mod:`.goals` (ALFRED's PDDL goal checks),
:mod:`.replay` (expert mode), :mod:`.film` and :mod:`.film_run` (FILM's parses and FILM mode),
:mod:`.catalog` (the per-floor-plan scene catalog), :mod:`.runs` (whole-root runs) and :mod:`.cli`.
"""

from eqagen.generators.household.alfred.backend import AlfredBackend, AlfredParams

__all__ = ["AlfredBackend", "AlfredParams"]
