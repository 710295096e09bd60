"""JSON as ctxgraph reads it: parsed without a traceback, and text PostgreSQL can store.

JSON itself allows two things no ``text`` value can hold: a NUL character (``\\u0000``) and a lone
UTF-16 surrogate escape (``\\ud800``), which Python decodes into a string that cannot be encoded as
UTF-8. Both then fail far from the input that held them (in psycopg, in a hash), so every reader of
outside JSON (run logs, tips files, world files, judge replies) asks here first.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["loads", "text_problem"]


def loads(text: str | bytes, **options: Any) -> Any:
    """``json.loads``, with nesting too deep for the parser reported as the ValueError it is."""
    try:
        return json.loads(text, **options)
    except RecursionError as exc:
        raise ValueError("JSON nested too deeply") from exc


def text_problem(value: Any, *, nul: bool = True) -> str | None:
    """Why a parsed JSON value holds a string PostgreSQL cannot store (in a key or a value), or None;
    with ``nul=False`` only a string that is not text at all (a lone surrogate) counts."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str):
            if nul and "\x00" in item:
                return "a string holds a NUL character (\\u0000), which text cannot store"
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "a string holds a lone UTF-16 surrogate (such as \\ud800), which is not text"
    return None
