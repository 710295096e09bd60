#!/usr/bin/env python3
"""Record what the released PL/pgSQL fit (@v0.6.0) gives on the fit tests' worlds: tests/data/fit_parity.json.

tests/test_fit.py holds the numpy fit (ctxgraph.fit) to these numbers. Deploys @v0.6.0 into a
throwaway database on the server the libpq variables (or DATABASE_URL) point at, builds each world
through the write path (tests/fit_worlds.py, the pgTAP factories; the graded skill stig, the binary
skill cve), runs ctxgraph.refresh_tip_effects
under each case's parameters, records every tip's method, effect, std error and misleading
probability by its body, and drops the database. Run once, when the worlds or the cases change:

    source scripts/db-env.sh && .venv/bin/python scripts/record-fit-parity.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fit_worlds import explaining_away_world, linked_world, set_parameter  # noqa: E402

RELEASE = "@v0.6.0"
AS_OF = datetime(2026, 12, 1, tzinfo=timezone.utc)
CASES = [
    ("exact", {}),
    ("blockwise effects, one-tip blame blocks", {"effects.max_component_tips": 1, "blame.max_block_tips": 1}),
    ("mean field", {"blame.max_work": 100}),
]


def main() -> int:
    dsn = os.environ.get("DATABASE_URL", "")
    name = f"ctxgraph_fit_parity_{os.getpid()}"
    with psycopg.connect(make_conninfo(dsn, dbname="postgres"), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        env = dict(os.environ, PGDATABASE=name)
        env.pop("DATABASE_URL", None)
        target = make_conninfo(dsn, dbname=name)
        subprocess.run(["sqitch", "deploy", "--quiet", "--to", RELEASE], cwd=ROOT, env=env, check=True)
        cases = []
        with psycopg.connect(target) as conn:
            for label, parameters in CASES:
                for fixture in ("factories.sql", "factories_consumers.sql"):
                    conn.execute((ROOT / "tests" / "fixtures" / fixture).read_text())
                linked_world(conn)
                explaining_away_world(conn)
                for parameter, value in parameters.items():
                    set_parameter(conn, parameter, value)
                skills = {}
                for role, skill in (("graded", "stig"), ("binary", "cve")):
                    conn.execute("SELECT ctxgraph.refresh_tip_effects(%s, %s)", (skill, AS_OF))
                    rows = conn.execute(
                        "SELECT t.body, e.method, e.effect, e.std_error, e.misleading_probability, e.parameters"
                        " FROM ctxgraph.tip_effects AS e JOIN ctxgraph.tips AS t ON t.skill = e.skill AND t.id = e.tip_id"
                        " WHERE e.skill = %s AND e.method <> 'no_evidence' ORDER BY t.body", (skill,)).fetchall()
                    skills[role] = {
                        "blame_method": rows[0][5]["blame_method"],
                        "tips": {body: {"method": method, "effect": effect, "std_error": std_error,
                                        "misleading_probability": misleading}
                                 for body, method, effect, std_error, misleading, _ in rows},
                    }
                cases.append({"name": label, "parameters": parameters, "skills": skills})
                conn.rollback()
        out = ROOT / "tests" / "data" / "fit_parity.json"
        out.write_text(json.dumps({"release": RELEASE, "as_of": AS_OF.isoformat(), "cases": cases}, indent=1,
                                  sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {out.relative_to(ROOT)}: {len(cases)} cases")
    finally:
        with psycopg.connect(make_conninfo(dsn, dbname="postgres"), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
    return 0


if __name__ == "__main__":
    sys.exit(main())
