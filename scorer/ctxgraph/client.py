"""The ctxgraph client: ``from ctxgraph.client import Client``.

The class lives in :mod:`ctxgraph.store`, the one module that speaks SQL; this name is the public import.
"""

from ctxgraph.store import Client, connect

__all__ = ["Client", "connect"]
