"""Small worlds for the attribution fit's tests, written through the write path (the pgTAP factories).

Shared by tests/test_fit.py and scripts/record-fit-parity.py, which records what the released PL/pgSQL
fit (@v0.6.0) gave on them (tests/data/fit_parity.json), so the numpy fit is held to it.
"""

from __future__ import annotations

import numpy as np
import psycopg


def scalar(conn: psycopg.Connection, query: str, params=()):
    return conn.execute(query, params).fetchone()[0]


def set_parameter(conn: psycopg.Connection, name: str, value: float) -> None:
    assert conn.execute("UPDATE ctxgraph.parameters SET value = %s WHERE name = %s", (value, name)).rowcount == 1


def tip(conn: psycopg.Connection, skill: str, rule: str, body: str) -> int:
    return scalar(conn, "SELECT tests.make_tip(%s, %s, %s)", (skill, rule, body))


def attempt(conn: psycopg.Connection, skill: str, run: str, rule: str, tips: list[int], followed: list[int],
            passed: bool, failure: str = "clean_failure") -> int:
    """One first-try attempt in a run of its own, the judge's verdict per tip: followed when listed."""
    attempt_id = scalar(
        conn,
        "SELECT tests.make_attempt_with_retrievals(%s, %s, %s, 1, %s, %s, %s, '2026-11-20 10:00+00')",
        (skill, run, rule, tips, passed, None if passed else failure),
    )
    conn.execute(
        "UPDATE ctxgraph.tip_retrievals SET tip_followed_llm = (tip_id = ANY (%s)) WHERE skill = %s AND attempt_id = %s",
        (followed, skill, attempt_id),
    )
    return attempt_id


def blame(fit, tip_id: int) -> float:
    return fit.misleading(tip_id)


def row(fit, tip_id: int) -> dict:
    i = int(np.searchsorted(fit.tip_id, tip_id))
    return {"effect": fit.effect[i], "std_error": fit.std_error[i], "upper": fit.upper_bound[i],
            "lower": fit.lower_bound[i], "method": fit.method[i], "component": fit.component_tips[i],
            "attempts": fit.attempts[i]}


def explaining_away_world(db: psycopg.Connection, graded: str = "stig", binary: str = "cve") -> dict[str, int]:
    """M and H always retrieved together, a rule that fails for everyone (in a binary skill: clean
    failures), two tips never apart (in a graded skill: failures that broke the system)."""
    t: dict[str, int] = {}
    # R-pair (binary): H followed in all 12 attempts, M in the even ones, which all fail.
    t["m"] = tip(db, binary, "R-pair", "tip M")
    t["h"] = tip(db, binary, "R-pair", "tip H")
    for g in range(1, 13):
        attempt(db, binary, f"pair-{g}", "R-pair", [t["m"], t["h"]], [t["m"], t["h"]] if g % 2 == 0 else [t["h"]],
                g % 2 == 1)
    # R-hard (binary): all ten attempts fail cleanly, whoever was followed.
    t["c"] = tip(db, binary, "R-hard", "tip C")
    t["d"] = tip(db, binary, "R-hard", "tip D")
    t["e"] = tip(db, binary, "R-hard", "tip E")
    for g in range(1, 11):
        followed = ([t["c"]] if g % 2 == 0 else []) + ([t["d"]] if g % 3 == 0 else []) + ([t["e"]] if g % 5 == 0 else [])
        attempt(db, binary, f"hard-{g}", "R-hard", [t["c"], t["d"], t["e"]], followed, False)
    # R-same (graded): S1 and S2 followed together in the attempts that broke the system.
    t["s1"] = tip(db, graded, "R-same", "tip S1")
    t["s2"] = tip(db, graded, "R-same", "tip S2")
    for g in range(1, 9):
        attempt(db, graded, f"same-{g}", "R-same", [t["s1"], t["s2"]], [t["s1"], t["s2"]] if g % 2 == 0 else [],
                g % 2 == 1, "health_failure")
    return t


def linked_world(db: psycopg.Connection, skill: str = "stig") -> list[int]:
    """Four rules of three tips, 30 attempts each; every attempt also retrieves one tip of the next
    rule, so the twelve tips form one group. Tip 1 of each rule hurts, tip 3 helps (fixed hashes)."""
    tips = {(r, k): tip(db, skill, f"bw-{r}", f"blockwise tip {r}.{k}") for r in range(1, 5) for k in range(1, 4)}
    rng = np.random.default_rng(7)
    for r in range(1, 5):
        for g in range(1, 31):
            shown = [tips[(r, k)] for k in range(1, 4)] + [tips[(r % 4 + 1, 1 + g % 3)]]
            followed = [t_id for t_id in shown if rng.random() < 0.5]
            kinds = [k for (rr, k), t_id in tips.items() if t_id in followed]
            p = 0.55 - 0.35 * kinds.count(1) + 0.25 * kinds.count(3)
            attempt(db, skill, f"bw-{r}-{g}", f"bw-{r}", shown, followed, rng.random() < p)
    return sorted(tips.values())
