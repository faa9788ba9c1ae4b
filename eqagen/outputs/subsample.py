"""TAG-EQA's subsampling of a history to K observations: every manipulation kept, every object seen once.

A graph whose nodes are the episode's events and the objects it saw, and whose edges are shared
observations: two nodes are joined where one step sees both (an event is seen at its own step). An
edge costs ``1 / (nodes the step sees)``, so a step that sees much is cheap, and the edges at an event's
step cost nothing, so the events' own steps are used first. The steps labelling the minimum spanning
tree's edges see every node of the graph; with the events' steps they are the observations kept.

Then, to fit K: a kept step whose objects other kept steps see too is dropped (latest first), and, if
still over K, the step adding fewest objects of its own goes, until K remain or only event steps are
left (every manipulation is kept even where they alone pass K). Under K, evenly spaced further steps
fill the history up to K, for context. Everything is ordered by step: the same episode gives the same
steps.
"""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

import networkx as nx
import numpy as np

from eqagen.core import Episode


def step_members(episode: Episode) -> list[set[tuple[str, int]]]:
    """Per step, the graph nodes it observes: ``("object", e)`` for each visible entity and
    ``("event", i)`` for each event at that step (its entity is seen there too, held or not)."""
    visible = episode.timeline.field("visible").astype(bool)
    members: list[set[tuple[str, int]]] = [{("object", int(e)) for e in np.flatnonzero(row)} for row in visible]
    for i, ev in enumerate(episode.events):
        members[ev.t].add(("event", i))
        if ev.entity >= 0:
            members[ev.t].add(("object", ev.entity))
    return members


def observation_graph(members: list[set[tuple[str, int]]], event_steps: set[int]) -> nx.Graph:
    """Nodes joined where a step sees both; each edge keeps its cheapest step (``step``, ``weight``)."""
    graph = nx.Graph()
    for t, nodes in enumerate(members):
        ordered = sorted(nodes)
        graph.add_nodes_from(ordered)
        weight = 0.0 if t in event_steps else 1.0 / len(ordered) if ordered else 1.0
        for u, v in pairwise(ordered):  # a chain joins the step's nodes: shared observation, n-1 edges
            old = graph.get_edge_data(u, v)
            if old is None or (weight, t) < (old["weight"], old["step"]):
                graph.add_edge(u, v, weight=weight, step=t)
    return graph


def spanning_steps(members: list[set[tuple[str, int]]], event_steps: set[int]) -> set[int]:
    """The event steps and the steps on the minimum spanning tree's edges; a node without edges (seen
    alone) brings the first step that sees it."""
    graph = observation_graph(members, event_steps)
    tree = nx.minimum_spanning_tree(graph, weight="weight", algorithm="kruskal")
    steps = set(event_steps) | {d["step"] for _, _, d in tree.edges(data=True)}
    for node in nx.isolates(graph):
        steps.add(next(t for t, m in enumerate(members) if node in m))
    return steps


def trim(steps: set[int], members: list[set[tuple[str, int]]], keep: set[int], k: int) -> set[int]:
    """Drop steps not in ``keep`` while over ``k``: first those whose nodes other kept steps see too (latest
    first), then the one seeing fewest nodes of its own."""
    steps = set(steps)
    seen_by = Counter(node for t in steps for node in members[t])  # how many kept steps see each node

    def own(t: int) -> int:
        return sum(seen_by[node] == 1 for node in members[t])

    def drop(t: int) -> None:
        steps.discard(t)
        seen_by.subtract(members[t])

    for t in sorted(steps - keep, reverse=True):
        if len(steps) > k and own(t) == 0:
            drop(t)
    while len(steps) > k and steps - keep:
        drop(min(sorted(steps - keep), key=own))
    return steps


def fill(steps: set[int], n_steps: int, k: int) -> set[int]:
    """Evenly spaced further steps, until ``k`` are kept (or every step is)."""
    steps = set(steps)
    for t in np.linspace(0, n_steps - 1, num=min(k, n_steps)).round().astype(int).tolist():
        if len(steps) >= k:
            break
        steps.add(int(t))
    for t in range(n_steps):  # rounding may repeat a step: take the first free ones
        if len(steps) >= k:
            break
        steps.add(t)
    return steps


def subsample_steps(episode: Episode, k: int) -> list[int]:
    """The steps of TAG-EQA's K-observation history, in time order (all of them when ``k`` covers every step)."""
    if k >= episode.n_steps:
        return list(range(episode.n_steps))
    members = step_members(episode)
    event_steps = {ev.t for ev in episode.events if ev.entity >= 0}
    steps = trim(spanning_steps(members, event_steps), members, event_steps, k)
    return sorted(fill(steps, episode.n_steps, k))
