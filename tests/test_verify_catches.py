"""sqitch verify checks behaviour: a function replaced by a wrong body fails its change's verify."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ctxgraph import simulate

ROOT = Path(__file__).resolve().parent.parent


def test_verify_fails_when_follow_weight_answers_a_constant(database_url: str) -> None:
    name = simulate.create_template(database_url)
    try:
        env = simulate._sqitch_env(database_url, name)
        ok = subprocess.run(["sqitch", "verify"], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        assert ok.returncode == 0, ok.stdout + ok.stderr
        params = {k: v for k, v in conninfo_to_dict(database_url).items() if k != "dbname"}
        with psycopg.connect(make_conninfo(**params, dbname=name), autocommit=True) as conn:
            # The finding: follow_weight replaced by `SELECT 1.0` and sqitch verify still said ok.
            conn.execute("CREATE OR REPLACE FUNCTION ctxgraph.follow_weight(llm boolean, emb double precision)"
                         " RETURNS double precision LANGUAGE sql AS 'SELECT 1.0::double precision'")
        broken = subprocess.run(["sqitch", "verify"], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        assert broken.returncode != 0
        assert "function_follow_weight" in broken.stdout + broken.stderr
    finally:
        simulate.drop_database(name, database_url)
