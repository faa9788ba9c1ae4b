"""A FILM-like agent doing ALFRED tasks in a :class:`~.world.HouseholdWorld`.

Like FILM (Min et al., 2022) it turns the task into a sequence of subgoals from ALFRED's templates,
builds a semantic map from what it sees, searches for targets it has not seen (looking around, then
going to exploration goals far from where it has been, then opening closed receptacles), plans
shortest paths on its own map of free space, and executes. FILM's imperfections are modelled on
purpose, drawn from the episode's generator: its map marks some blocked cells as free (it bumps
into them and side-steps), it misplaces some objects by a few decimetres (so an interaction fails as
not visible or too far and it re-approaches), and it sometimes forgets to open a receptacle before
putting into it (ALFRED's "receptacle is closed" failure). It stops at success, after the step
limit, or after ``max_failures`` failed actions, as ALFRED's evaluation does.

FILM's own failure modes (FILM paper, section 5.2) are mechanisms switched on by the config, off by
default so the embedded household episodes stay as they were: a segmentation model that never picks
out some instances and sees less the farther an object is (``blind_small``, ``blind_other``,
``recall_falloff``: the search then explores until the step limit), an interaction mask that misses a
small or far object and falls on what it stands on (``mask_error_deg``), and a search that does not
open receptacles (``open_to_search=False``: an object shut in a cabinet or the fridge is never found). The
agent keeps what it was doing when it stopped (``phase``, ``sought``), its failed moves and failed
interactions apart (``collisions``, ``interaction_failures``), and how often its search came back to a
cell it had already searched from (``search_revisits``): the trace from which the failure is classified.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from eqagen.generators.household.scene import GRID_SIZE
from eqagen.generators.household.tasks import KNIVES, AlfredTask, GoalChecker
from eqagen.generators.household.world import (
    _SIN_COS,
    CAMERA_HEIGHT,
    HORIZON_MAX,
    HORIZON_MIN,
    HORIZON_STEP,
    NAV_ACTIONS,
    OBJECT_ACTIONS,
    ActionResult,
    HouseholdWorld,
    dense_index,
    neighbours,
)

Action = tuple[str, int, int]
BLOCKED_COST = 1e6
# Distances (metres) within which the agent looks for a standing cell, tried in turn, per approach mode.
APPROACH_REACH = {"normal": (1.0, 1.25, 1.5, 3.0), "close": (0.5, 0.75, 1.0, 3.0), "eager": (1.75, 3.0)}
MISS_PATCH = 3  # cells per side of the patches the obstacle map misses together
Behaviour = Generator[Action, ActionResult, bool]


@dataclass(frozen=True)
class AgentConfig:
    """FILM's character in numbers (defaults tuned so ALFRED-like success and failure rates come out)."""

    max_failures: int = 10  # ALFRED's evaluation stops after 10 failed API actions
    phantom_free: float = 0.7  # chance that a seen obstacle cell stays unmapped (depth noise)
    obstacle_range: float = 2.0  # how far the obstacle map reaches (metres)
    mislocate: float = 0.6  # share of objects whose mapped position is off
    mislocate_m: float = 0.55  # how far off (metres)
    eager: float = 0.8  # chance of trying an interaction from the edge of FILM's threshold
    retry_in_place: float = 0.35  # chance of repeating a failed interaction from the same spot
    forget_open: float = 0.5  # chance of putting into a closed receptacle without opening it
    map_range: float = 2.5  # the semantic map sees objects this far (metres)
    detect_small: float = 0.2  # chance per view that segmentation picks out a small object (0.9 otherwise)
    explore_goals_before_opening: int = 3
    look_horizon: float = 30.0
    open_to_search: bool = True  # open closed receptacles when exploring found nothing (FILM does not)
    blind_small: float = 0.0  # chance that segmentation never picks out a given small instance
    blind_other: float = 0.0  # the same for medium and large instances
    recall_falloff: bool = False  # per-view recall falls linearly from 1 at the agent to 0 at map_range
    mask_error_deg: float = 0.0  # pointing error (degrees, per axis) of the interaction mask; 0: exact
    semantic_search: bool = False  # search the open receptacles that can hold the target first (FILM's policy)


@dataclass(frozen=True)
class Subgoal:
    action: str
    object_type: str  # target type ("" for the task object bound earlier)
    bind: str = ""  # name under which the chosen instance is remembered ("obj", "recep", ...)
    use: str = ""  # reuse the instance bound under this name


def plan_subgoals(task: AlfredTask, openable: set[str], rng: np.random.Generator, cfg: AgentConfig) -> list[Subgoal]:
    """ALFRED's high-level plan of a task, as FILM's templates produce it."""
    t = task.task_type
    plan = _pickup_plan(task)
    if t == "pick_clean_then_place_in_recep":
        plan += _put("SinkBasin", "sink", openable, rng, cfg)
        plan += [Subgoal("ToggleObjectOn", "Faucet", "faucet"), Subgoal("ToggleObjectOff", "Faucet", use="faucet")]
        plan += [Subgoal("PickupObject", "", use="obj")]
    elif t == "pick_heat_then_place_in_recep":
        plan += [Subgoal("OpenObject", "Microwave", "mw"), Subgoal("PutObject", "Microwave", use="mw")]
        plan += [Subgoal("CloseObject", "", use="mw"), Subgoal("ToggleObjectOn", "", use="mw")]
        plan += [Subgoal("ToggleObjectOff", "", use="mw"), Subgoal("OpenObject", "", use="mw")]
        plan += [Subgoal("PickupObject", "", use="obj"), Subgoal("CloseObject", "", use="mw")]
    elif t == "pick_cool_then_place_in_recep":
        plan += [Subgoal("OpenObject", "Fridge", "fr"), Subgoal("PutObject", "Fridge", use="fr")]
        plan += [Subgoal("CloseObject", "", use="fr"), Subgoal("OpenObject", "", use="fr")]
        plan += [Subgoal("PickupObject", "", use="obj"), Subgoal("CloseObject", "", use="fr")]
    if t == "look_at_obj_in_light":
        return [*plan, Subgoal("ToggleObjectOn", task.toggle_target or "", "lamp")]
    if t == "pick_and_place_with_movable_recep":
        plan += _put(task.mrecep_target or "", "mrecep", openable, rng, cfg)
        plan += [Subgoal("PickupObject", "", use="mrecep")]
    plan += _put(task.parent_target or "", "recep", openable, rng, cfg)
    if t == "pick_two_obj_and_place":
        plan += [Subgoal("PickupObject", task.moved_type(), "obj2")]
        plan += _put(task.parent_target or "", "recep", openable, rng, cfg, reuse=True)
    return plan


def _pickup_plan(task: AlfredTask) -> list[Subgoal]:
    if not task.object_sliced:
        return [Subgoal("PickupObject", task.object_target, "obj")]
    return [
        Subgoal("PickupObject", "Knife", "knife"),
        Subgoal("SliceObject", task.object_target, "whole"),
        Subgoal("PutObject", "CounterTop|DiningTable|SideTable|Desk|Shelf|Drawer", "knife_rest"),
        Subgoal("PickupObject", task.moved_type(), "obj"),
    ]


def _put(
    recep: str, name: str, openable: set[str], rng: np.random.Generator, cfg: AgentConfig, reuse: bool = False
) -> list[Subgoal]:
    put = Subgoal("PutObject", recep, "" if reuse else name, name if reuse else "")
    if recep not in openable:
        return [put]
    opener = Subgoal("OpenObject", recep, "" if reuse else name, name if reuse else "")
    if rng.random() < cfg.forget_open:  # FILM goes straight to the put; the world will say it is closed
        steps = [Subgoal("PutObject", recep, "" if reuse else name, name if reuse else "")]
    else:
        steps = [opener, Subgoal("PutObject", recep, use=name)]
    return [*steps, Subgoal("CloseObject", recep, use=name)]


class _Map:
    """The agent's map of free space, as a sparse graph for shortest paths.

    Like FILM's obstacle map it starts with every cell of the room believed free and marks a cell
    blocked when the camera sees it (a floor cell in view, within ``obstacle_range``) or when the
    agent bumps into it. Depth perception is imperfect: a seen obstacle cell stays unmapped with
    probability ``phantom_free``, so the planner sometimes routes through furniture and collides.
    """

    def __init__(self, world: HouseholdWorld, rng: np.random.Generator, cfg: AgentConfig):
        cache = world.scene.cache
        if "agent_map" not in cache:
            cache["agent_map"] = _map_structure(world)
        self.ij, self.n_real, self.neighbour, self.lookup, block = cache["agent_map"]
        self.xz = self.ij * GRID_SIZE
        self.cfg = cfg
        self.blocked = np.zeros(len(self.ij), dtype=bool)
        self.pending = np.arange(len(self.ij)) >= self.n_real  # obstacle cells not yet seen
        self.n_pending = int(self.pending.sum())
        self._views = cache.setdefault("agent_views", {})
        # Misses come in patches (a low table, a dark corner), not single cells, so paths cross them.
        self.misses = (rng.random(int(block.max()) + 1) < cfg.phantom_free)[block]
        self.version = 0
        self._build_graph()

    def observe(self, cell: int, yaw: float, horizon: float, eye: float) -> None:
        """Map the obstacle cells now in view (floor visible from ``near`` metres, up to the range)."""
        if not self.n_pending:
            return
        cells = self._cells_in_view(cell, yaw, horizon, eye)
        newly = cells[self.pending[cells]]
        if len(newly) == 0:
            return
        self.pending[newly] = False
        self.n_pending -= len(newly)
        mapped = newly[~self.misses[newly]]
        if len(mapped):
            self.blocked[mapped] = True
            self._build_graph()

    def _cells_in_view(self, cell: int, yaw: float, horizon: float, eye: float) -> np.ndarray:
        """The non-reachable cells the camera sees from a pose: pure geometry, cached per scene and pose."""
        key = (cell, yaw, horizon, round(eye, 3), self.cfg.obstacle_range)
        hit = self._views.get(key)
        if hit is not None:
            return hit
        c = self.xz[self.n_real :] - self.xz[cell]
        sy, cy = _SIN_COS[int(yaw) % 360]
        fwd = c[:, 0] * sy + c[:, 1] * cy
        right = c[:, 0] * cy - c[:, 1] * sy
        lowest = min(horizon + 45.0, 89.0)
        near = eye / np.tan(np.deg2rad(lowest)) if lowest > 0 else np.inf
        seen = (np.abs(right) <= fwd) & (fwd >= near - GRID_SIZE / 2) & (fwd <= self.cfg.obstacle_range)
        self._views[key] = out = np.flatnonzero(seen) + self.n_real
        return out

    def _build_graph(self) -> None:
        """Edges into or out of a blocked cell get a prohibitive weight (cheaper than rebuilding the graph)."""
        if not hasattr(self, "graph"):
            src, dst = np.nonzero(self.neighbour >= 0)
            n = len(self.ij)
            self.graph = csr_matrix((np.ones(len(src)), (src, self.neighbour[src, dst])), shape=(n, n))
            self._edge_src = np.repeat(np.arange(n), np.diff(self.graph.indptr))
        g = self.graph
        g.data = np.where(self.blocked[self._edge_src] | self.blocked[g.indices], BLOCKED_COST, 1.0)
        self.version += 1

    def block(self, k: int) -> None:
        self.blocked[k] = True
        self.n_pending -= int(self.pending[k])
        self.pending[k] = False
        self._build_graph()

    def distances_from(self, cells: list[int] | int) -> np.ndarray:
        dist = dijkstra(self.graph, indices=cells, min_only=True)
        dist[dist >= BLOCKED_COST] = np.inf
        return dist


def _map_structure(world: HouseholdWorld) -> tuple[np.ndarray, int, np.ndarray, dict, np.ndarray]:
    """Reachable cells, then every unreachable cell of the room's bounding box (phantom candidates: FILM
    plans through space it has not mapped as blocked), with neighbours."""
    g = world.grid
    grid, lo = dense_index(g.ij, pad=1)
    other = np.argwhere(grid < 0)
    ij = np.vstack([g.ij, other + lo])
    lookup = {(int(i), int(j)): k for k, (i, j) in enumerate(ij.tolist())}
    block = np.unique(np.floor_divide(ij, MISS_PATCH), axis=0, return_inverse=True)[1].reshape(-1)
    return ij, len(g.ij), neighbours(ij), lookup, block


class FilmAgent:
    """Runs one episode: ``run()`` drives the world until success, the step limit or too many failures."""

    def __init__(
        self, world: HouseholdWorld, task: AlfredTask, rng: np.random.Generator, cfg: AgentConfig | None = None
    ):
        self.w, self.task, self.rng = world, task, rng
        self.cfg = cfg or AgentConfig()
        self.map = _Map(world, rng, self.cfg)
        self.goal = GoalChecker(task, world)
        n = world.n_entities
        self.known = np.zeros(n, dtype=bool)
        off = rng.random(n) < self.cfg.mislocate
        ang = rng.uniform(0, 2 * np.pi, n)
        lift = rng.uniform(-0.5, 0.5, n)  # height errors tilt the camera wrongly
        self.noise = np.stack([np.cos(ang), lift, np.sin(ang)], axis=1) * self.cfg.mislocate_m * off[:, None]
        self.bound: dict[str, int] = {}
        self.excluded: set[int] = set()
        self.searched: set[int] = set()
        self.visited = np.zeros(len(self.map.ij), dtype=bool)
        self.failures = 0
        self.stop_reason = ""
        self._last_pose: tuple = ()
        self.types = np.array(world.types)
        small = np.array([a["size"] == "small" for a in world.attributes])
        self.detect = np.where(small, self.cfg.detect_small, 0.9)
        if self.cfg.blind_small or self.cfg.blind_other:  # drawn only when on: the default stream is unchanged
            self.detect[rng.random(n) < np.where(small, self.cfg.blind_small, self.cfg.blind_other)] = 0.0
        self.phase = "start"  # "search", "approach" or "interact": what the agent was doing last
        self.sought = ""  # the object type the current search is for
        self.collisions = 0  # failed moves (AI2-THOR: the agent is blocked)
        self.interaction_failures = 0  # failed object actions (visibility, distance, closed, no room, ...)
        self.search_revisits = 0  # arrivals, while searching, at a cell already searched from
        self._searched_cells = np.zeros(len(self.map.ij), dtype=bool)
        self._search_cell = -1
        self._seeking: Subgoal | None = None

    # ------------------------------------------------------------------ driver
    def run(self) -> tuple[bool, str]:
        """Act until done; returns (success, stop_reason)."""
        self._observe()
        behaviour = self._episode()
        try:
            action = next(behaviour)
            while True:
                if self.w.n_steps - 1 >= self.w.max_steps:
                    return self._finish("max_steps")
                result = self.w.act(*action)
                self._observe()
                if not result.success:
                    self.failures += 1
                    if action[0] in NAV_ACTIONS:
                        self.collisions += 1
                    elif action[0] in OBJECT_ACTIONS:
                        self.interaction_failures += 1
                    if self.failures >= self.cfg.max_failures:
                        return self._finish("max_failures")
                elif (
                    action[0]
                    not in (
                        "MoveAhead",
                        "MoveBack",
                        "MoveLeft",
                        "MoveRight",
                        "RotateLeft",
                        "RotateRight",
                        "LookUp",
                        "LookDown",
                    )
                    and self.goal()
                ):
                    return self._finish("success")
                action = behaviour.send(result)
        except StopIteration:
            return self._finish("success" if self.goal() else "plan_finished")

    def _finish(self, reason: str) -> tuple[bool, str]:
        self.stop_reason = reason
        return reason == "success", reason

    def _observe(self) -> None:
        """The semantic map learns what the camera sees within map range (not inside closed receptacles)."""
        w = self.w
        seen = w.flags["exists"] & w.in_view & ~w.hidden & (w.eff_dist <= self.cfg.map_range)
        recall = self.detect
        if self.cfg.recall_falloff:  # fewer pixels on a farther object: the mask is found less often
            recall = recall * np.clip(1.0 - w.eff_dist / self.cfg.map_range, 0.0, 1.0)
        self.known |= seen & (self.rng.random(len(seen)) < recall)  # segmentation misses small things
        if self.phase == "search":
            self._note_search_cell(w.cell)
        self.visited[w.cell] = True  # the map lists the reachable cells first, in the grid's order
        if self._last_pose == (w.cell, w.yaw, w.horizon):
            return
        self._last_pose = (w.cell, w.yaw, w.horizon)
        self.map.observe(w.cell, w.yaw, w.horizon, w.agent_y + CAMERA_HEIGHT - w.scene.floor_y)

    def sought_enclosed(self) -> bool:
        """Searching, and every instance of the sought type that segmentation can pick out is shut inside a
        closed receptacle: opening one would have found it."""
        if self.phase != "search" or self._seeking is None:
            return False
        mask = self._candidates(self._seeking) & (self.detect > 0)
        return bool(mask.any() and self.w.hidden[mask].all())

    def sought_absent(self) -> bool:
        """Searching for a type of which the scene holds no instance at all."""
        return self.phase == "search" and self._seeking is not None and not self._candidates(self._seeking).any()

    def _note_search_cell(self, cell: int) -> None:
        """Count an arrival at a cell the search already went through (FILM's looping while searching)."""
        if cell == self._search_cell:
            return
        self._search_cell = cell
        self.search_revisits += int(self._searched_cells[cell])
        self._searched_cells[cell] = True

    # ------------------------------------------------------------------ behaviours
    def _episode(self) -> Behaviour:
        yield from self._look_around(3)
        openable = {t.name for t in self.w.cat.types if t.can("openable") and t.can("enclosing")}
        plan = plan_subgoals(self.task, openable, self.rng, self.cfg)
        i = 0
        while i < len(plan):
            sg = plan[i]
            outcome = yield from self._subgoal(sg)
            if outcome == "closed":  # FILM forgot to open: open, then retry the put
                plan.insert(i, Subgoal("OpenObject", sg.object_type, use=sg.use or sg.bind))
                if sg.bind:
                    plan[i + 1] = Subgoal(sg.action, sg.object_type, use=sg.bind)
                continue
            i += 1
        return True

    def _look_around(self, turns: int) -> Behaviour:
        yield from self._set_horizon(self.cfg.look_horizon)
        for _ in range(turns):
            yield ("RotateLeft", -1, -1)
        return True

    def _subgoal(self, sg: Subgoal) -> Generator[Action, ActionResult, str]:
        """Find an instance, go to it, face it, act; re-approach or pick another instance on failure."""
        tries = 0
        mode = "eager" if self.rng.random() < self.cfg.eager else "normal"
        while True:
            target = yield from self._find(sg)
            if sg.bind:
                self.bound[sg.bind] = target
            self.phase = "approach"
            yield from self._approach(target, mode)
            self.phase = "interact"
            result = yield self._interaction(sg, target)
            if not result.success and "visib" in result.error and self.rng.random() < self.cfg.retry_in_place:
                result = yield self._interaction(sg, target)  # FILM repeats an action it thinks glitched
            if result.success:
                return "ok"
            tries += 1
            self.noise[target] = 0.0  # FILM re-localises the object from the new view
            outcome, mode = self._react(sg, target, result.error, tries, mode)
            if outcome:
                return outcome

    def _react(self, sg: Subgoal, target: int, error: str, tries: int, mode: str) -> tuple[str, str]:
        """What to do after a failed interaction: (outcome to return or "", next approach mode)."""
        if "CLOSED" in error:
            return "closed", mode
        if "if it's already" in error or "is already open" in error:
            return "ok", mode  # the state the subgoal wanted is already there
        no_room = "No valid positions" in error
        if no_room and mode != "close":
            return "", "close"  # AI2-THOR's put often wants the agent closer: step in and retry
        if no_room or "cannot be placed" in error or tries % 3 == 0:
            if not sg.use:
                self.excluded.add(target)
            elif tries >= 4:
                return "gave_up", mode
        return "", "normal"

    def _interaction(self, sg: Subgoal, target: int) -> Action:
        target = self._masked(target)
        if sg.action == "PutObject":
            return ("PutObject", self.w.held, target)
        return (sg.action, target, -1)

    def _masked(self, target: int) -> int:
        """The object FILM's interaction mask falls on: ALFRED acts on the object under the mask's pixels.

        The mask is centred on the believed object with a Gaussian pointing error of ``mask_error_deg``
        per axis; it hits when the error is within the object's angular radius (chance
        ``1 - exp(-theta^2 / 2 sigma^2)``), else it falls on what the object stands on, and AI2-THOR
        answers for that object ("CounterTop|... is not pickupable") or acts on it.
        """
        w = self.w
        if not self.cfg.mask_error_deg or target == w.held or w.parent[target] < 0:
            return target
        theta = np.degrees(np.arctan2(w.radius[target], max(float(w.eff_dist[target] + w.radius[target]), 0.1)))
        hit = 1.0 - np.exp(-(theta**2) / (2.0 * self.cfg.mask_error_deg**2))
        return target if self.rng.random() < hit else int(w.parent[target])

    def _find(self, sg: Subgoal) -> Generator[Action, ActionResult, int]:
        """The nearest known instance; explore until one is known."""
        if sg.use:
            return self.bound[sg.use]
        explored = 0
        while True:
            target = self._best_known(sg)
            if target >= 0:
                return target
            self.phase, self.sought, self._seeking = "search", sg.object_type, sg
            if (
                self.cfg.open_to_search
                and explored >= self.cfg.explore_goals_before_opening
                and (yield from self._open_to_search(sg))
            ):
                continue
            if not (self.cfg.semantic_search and (yield from self._search_receptacle(sg))):
                yield from self._explore()
            explored += 1

    def _candidates(self, sg: Subgoal) -> np.ndarray:
        w = self.w
        mask = np.isin(self.types, sg.object_type.split("|")) & w.flags["exists"]
        if sg.action == "PickupObject":
            mask &= self.w.parent != self._task_recep_index_mask_value()
            if sg.object_type in KNIVES:
                mask |= np.isin(self.types, KNIVES) & w.flags["exists"]
        if sg.action == "SliceObject":
            mask &= ~w.flags["sliced"]
        if self.excluded:
            mask[list(self.excluded)] = False
        if w.held >= 0:
            mask[w.held] = False
        return mask

    def _task_recep_index_mask_value(self) -> int:
        """The receptacle instance the task's objects go to (objects already there are not picked again)."""
        return self.bound.get("recep", -3)

    def _best_known(self, sg: Subgoal) -> int:
        cands = np.flatnonzero(self._candidates(sg) & self.known)
        if len(cands) == 0:
            return -1
        d = np.hypot(*(self.w.pos[cands][:, [0, 2]] - self.w.agent_xz).T)
        return int(cands[np.argmin(d)])

    def _explore(self) -> Behaviour:
        """Go to a sampled cell far from the visited ones, then look around."""
        real = np.flatnonzero(~self.map.blocked[: self.map.n_real])
        picks = self.rng.choice(real, size=min(8, len(real)), replace=False)
        vis = np.flatnonzero(self.visited)
        far = np.min(np.abs(self.map.ij[picks][:, None, :] - self.map.ij[vis][None, :, :]).sum(axis=2), axis=1)
        goal = int(picks[np.argmax(far + self.rng.random(len(picks)))])
        yield from self._navigate([goal])
        yield from self._look_around(3)
        return True

    def _search_receptacle(self, sg: Subgoal) -> Generator[Action, ActionResult, bool]:
        """FILM's semantic search policy: look at the nearest open receptacle that can hold the target and
        has not been looked at yet (shut ones are not looked into); False when none is left."""
        w = self.w
        wanted = np.isin(self.types, sg.object_type.split("|"))
        if not wanted.any():
            return False
        can_hold = w.compatible[:, wanted].any(axis=1) & w.flags["exists"] & w.can["receptacle"]
        open_ = ~(w.can["enclosing"] & ~w.flags["open"])
        cands = np.array([c for c in np.flatnonzero(can_hold & open_) if c not in self.searched], dtype=np.int64)
        if len(cands) == 0:
            return False
        r = int(cands[np.argmin(np.hypot(*(w.pos[cands][:, [0, 2]] - w.agent_xz).T))])
        self.searched.add(r)
        yield from self._approach(r)
        return True

    def _open_to_search(self, sg: Subgoal) -> Generator[Action, ActionResult, bool]:
        """Open the nearest known closed receptacle that could hold the target, look in, close it."""
        w = self.w
        wanted = np.isin(self.types, sg.object_type.split("|"))
        can_hold = w.compatible[:, wanted].any(axis=1) if wanted.any() else np.zeros(w.n_entities, bool)
        cands = np.flatnonzero(can_hold & w.can["enclosing"] & self.known & ~w.flags["open"])
        cands = np.array([c for c in cands if c not in self.searched], dtype=np.int64)
        if len(cands) == 0:
            return False
        r = int(cands[np.argmin(np.hypot(*(w.pos[cands][:, [0, 2]] - w.agent_xz).T))])
        self.searched.add(r)
        yield from self._approach(r)
        result = yield ("OpenObject", r, -1)
        if result.success and not (self._candidates(sg) & ~w.hidden & self.known).any() and self.rng.random() < 0.5:
            yield ("CloseObject", r, -1)
        return True

    # ------------------------------------------------------------------ navigation
    def _believed(self, i: int) -> np.ndarray:
        return self.w.pos[i] + self.noise[i]

    def _approach(self, target: int, mode: str = "normal") -> Behaviour:
        """Walk to a cell near the (believed) target, turn to it and tilt the camera onto it.

        ``mode``: "normal" (within 1 m), "close" (as close as possible), or "eager" (stop at the edge of
        FILM's interaction threshold, 1.25-1.75 m, often too far).
        """
        if target == self.w.held:
            return True
        p = self._believed(target)
        d = np.hypot(self.map.xz[:, 0] - p[0], self.map.xz[:, 1] - p[2])
        near = 1.25 if mode == "eager" else 0.0
        for reach in APPROACH_REACH[mode]:
            goals = np.flatnonzero((d <= reach) & (d > near) & ~self.map.blocked)
            if len(goals):
                break
        yield from self._navigate(list(goals))
        yield from self._face(p)
        return True

    def _current_node(self) -> int:
        return self.w.cell  # reachable cells are the map's first nodes, in the grid's order

    def _navigate(self, goals: list[int]) -> Behaviour:
        """Follow shortest paths on the believed map; on a bump, mark the cell blocked, side-step, replan."""
        if not goals:
            return False
        dist, version = self.map.distances_from(goals), self.map.version
        is_goal = set(goals)
        for _ in range(60):
            here = self._current_node()
            if here in is_goal:
                return True
            if version != self.map.version:  # the map learned an obstacle: replan
                dist, version = self.map.distances_from(goals), self.map.version
            if not np.isfinite(dist[here]):
                return False
            nbrs = self.map.neighbour[here]
            ok = (nbrs >= 0) & np.isfinite(dist[np.maximum(nbrs, 0)]) & (dist[np.maximum(nbrs, 0)] < dist[here])
            ok &= ~self.map.blocked[np.maximum(nbrs, 0)]
            if not ok.any():
                return False
            d_abs = int(np.flatnonzero(ok)[0])
            yield from self._turn_to(d_abs)
            result = yield ("MoveAhead", -1, -1)
            if not result.success:
                self.map.block(int(nbrs[d_abs]))
                side = "MoveLeft" if self.rng.random() < 0.5 else "MoveRight"
                yield (side, -1, -1)
        return False

    def _turn_to(self, d_abs: int) -> Behaviour:
        cur = round(self.w.yaw / 90.0) % 4
        diff = (d_abs - cur) % 4
        if diff == 1:
            yield ("RotateRight", -1, -1)
        elif diff == 3:
            yield ("RotateLeft", -1, -1)
        elif diff == 2:
            turn = "RotateRight" if self.rng.random() < 0.5 else "RotateLeft"
            yield (turn, -1, -1)
            yield (turn, -1, -1)
        return True

    def _face(self, p: np.ndarray) -> Behaviour:
        xz = self.w.agent_xz
        dx, dz = p[0] - xz[0], p[2] - xz[1]
        if abs(dx) + abs(dz) > 1e-6:
            yaw = np.degrees(np.arctan2(dx, dz)) % 360.0
            yield from self._turn_to(round(yaw / 90.0) % 4)
        horiz = max(np.hypot(dx, dz), 0.2)
        below = self.w.agent_y + CAMERA_HEIGHT - p[1]
        yield from self._set_horizon(np.degrees(np.arctan2(below, horiz)))
        return True

    def _set_horizon(self, angle: float) -> Behaviour:
        want = float(np.clip(round(angle / HORIZON_STEP) * HORIZON_STEP, HORIZON_MIN, HORIZON_MAX))
        while abs(self.w.horizon - want) > 1e-6:
            result = yield ("LookDown" if want > self.w.horizon else "LookUp", -1, -1)
            if not result.success:
                break
        return True
