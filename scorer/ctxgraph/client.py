"""The ctxgraph client: ``from ctxgraph.client import Client``.

The class lives in :mod:`ctxgraph.store`, the one module that speaks SQL; this name is the public import.
"""

from ctxgraph.store import DEADLOCK_RETRIES, Client, connect, run_in_transaction

__all__ = ["DEADLOCK_RETRIES", "Client", "connect", "run_in_transaction"]
