"""eqagen: synthetic embodied-question-answering datasets."""

__version__ = "0.1.0"
GENERATOR_VERSION = f"eqagen-{__version__}"
