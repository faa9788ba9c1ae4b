"""The pipeline: library stages (:mod:`eqagen.flows.stages`) and the Prefect flow that wires them."""
