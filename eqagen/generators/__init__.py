"""Episode sources, one subpackage per world family; see :mod:`eqagen.generators.base`."""

from eqagen.generators.base import EpisodeSpec, WorldBackend, get_backend, list_backends, register_backend

__all__ = ["EpisodeSpec", "WorldBackend", "get_backend", "list_backends", "register_backend"]
