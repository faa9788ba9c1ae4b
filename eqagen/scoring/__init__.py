"""Scoring a model's predictions on a dataset the way each benchmark scores its own (docs/scoring.md).

One module per metric, each metric a small pure function over one record with its formula in its
docstring: :mod:`.choice` (accuracy by answer content, the binomial test against chance), :mod:`.structured`
(TAG-EQA's structured match), :mod:`.freeform` (exact match after normalisation), :mod:`.readback` (a
structured answer read back from answer text), :mod:`.counts` (exact and mean relative accuracy),
:mod:`.navigation` (d_T), :mod:`.judge` (an LLM judge, OpenEQA's metric). :mod:`.predictions` reads a
predictions file, :mod:`.records` scores every record, :mod:`.breakdown` groups the per-record results by
condition with 95% intervals, :mod:`.report` lays the report out, :mod:`.similarity` holds the structured
match's text similarities, :mod:`.reference` makes the reference predictions that need no model and
:mod:`.perturb` the perturbed answers that validate the structured match.
"""
