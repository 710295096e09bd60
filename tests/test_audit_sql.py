"""The analysts' sql/audit files: runnable with psql as ctxgraph_analyst, and the very files ctxgraph audit runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

import psycopg
import pytest

from ctxgraph import audit_file, audit_store, connection_store, reports

ROOT = Path(__file__).resolve().parent.parent
AUDIT = ROOT / "sql" / "audit"
FILES = sorted(AUDIT.glob("*.sql"))


@pytest.fixture(scope="module")
def audited_data(database_url: str, tmp_path_factory: pytest.TempPathFactory):
    """A little data in stig: a scored run with a pass, a clean failure and a health failure."""
    from conftest import seed_run

    with connection_store.connect(database_url) as connection:
        rule = f"rule_{uuid.uuid4().hex[:8]}"
        run = seed_run(connection, tmp_path_factory.mktemp("audit"), [
            {"rule": rule, "tips": [f"Tip A {uuid.uuid4().hex}", f"Tip B {uuid.uuid4().hex}"], "passed": False,
             "failure_mode": "health_failure"},
            {"rule": rule, "tips": [f"Tip C {uuid.uuid4().hex}"], "passed": False, "failure_mode": "clean_failure"},
            {"rule": rule, "tips": [f"Tip D {uuid.uuid4().hex}"], "passed": True},
        ])
        ids = run.retrieval_ids
        connection.execute(
            "UPDATE stig.tip_retrievals SET tip_followed_llm = v.llm, tip_followed_emb = v.emb,"
            " tip_followed_computed_at = now() FROM unnest(%s::bigint[], %s::boolean[], %s::float8[]) AS v (id, llm, emb)"
            " WHERE tip_retrievals.id = v.id",
            (ids, [True, False, None, True], [0.9, 0.1, 0.7, 0.05]))
        connection.commit()
    return run, rule


def psql(database_url: str, path: Path, *variables: str, role: str = "ctxgraph_analyst"):
    args = ["psql", "-X", "-v", "ON_ERROR_STOP=1", "-v", "skill=stig"]
    for variable in variables:
        args += ["-v", variable]
    env = {**os.environ, "PGOPTIONS": f"{os.environ.get('PGOPTIONS', '')} -c role={role}"}
    return subprocess.run([*args, "-d", database_url, "-f", str(path)], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_each_audit_file_runs_in_psql_as_the_analyst(path: Path, audited_data, database_url: str) -> None:
    run, rule = audited_data
    result = psql(database_url, path)
    assert result.returncode == 0, result.stderr
    assert "ERROR" not in result.stderr
    assert "== " in result.stdout  # its section headings were printed
    with_vars = psql(database_url, path, f"run={run.run_id}", f"rule={rule}", "top=3")
    assert with_vars.returncode == 0, with_vars.stderr


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")
def test_the_psql_runs_really_are_the_analyst_and_would_fail_on_an_error(audited_data, database_url: str,
                                                                        tmp_path: Path) -> None:
    probe = tmp_path / "probe.sql"
    probe.write_text("SELECT current_user AS who;\nSELECT 1 FROM ctxgraph.no_such_view;\n")
    result = psql(database_url, probe)
    assert "ctxgraph_analyst" in result.stdout
    assert result.returncode != 0 and "no_such_view" in result.stderr
    write = tmp_path / "write.sql"
    write.write_text("UPDATE stig.tips SET body = body WHERE FALSE;\n")
    denied = psql(database_url, write)
    assert denied.returncode != 0 and "permission denied" in denied.stderr


def test_the_rule_ranking_file_shows_the_rule_in_psql_and_in_the_cli(audited_data, database_url: str,
                                                                     conn: psycopg.Connection) -> None:
    run, rule = audited_data
    if shutil.which("psql"):
        result = psql(database_url, AUDIT / "07_rule_ranking.sql", f"rule={rule}")
        assert result.returncode == 0 and str(run.attempts[2].tip_ids[0]) in result.stdout
    data = reports.collect(conn, "stig", run.run_id, rule, top=3)
    ranking = data.section("ranking")
    assert ranking is not None
    assert sorted(row[ranking.columns.index("tip_id")] for row in ranking.rows) == sorted(
        tip for attempt in run.attempts for tip in attempt.tip_ids)
    overview = data.section("overview")
    assert overview is not None and [row[0] for row in overview.rows] == [run.run_id]  # -v run filters
    top = data.section("top")
    assert top is not None and len(top.rows) == 3  # -v top (stig holds at least the 4 tips scored above)
    assert data.cosines_followed and data.cosines_ignored  # the picture data file ran


def test_the_package_ships_the_same_files() -> None:
    shipped = {f.name: f.read_bytes() for f in reports.audit_files()}
    assert shipped == {f.name: f.read_bytes() for f in FILES}
    assert len(shipped) >= 8


@pytest.mark.skipif(os.environ.get("CTXGRAPH_SKIP_WHEEL") == "1", reason="CTXGRAPH_SKIP_WHEEL=1")
def test_an_installed_wheel_carries_the_audit_files_and_prompts(tmp_path: Path) -> None:
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=300,
                           check=False)
    assert build.returncode == 0, build.stderr
    (wheel,) = tmp_path.glob("ctxgraph-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for path in FILES:
            assert archive.read(f"ctxgraph/audit/{path.name}") == path.read_bytes()
        assert "ctxgraph/prompts/stig/tip_follow_judge.md" in names
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        assert "ctxgraph = ctxgraph.cli:main" in archive.read(entry_points).decode()


def test_psql_variables_are_bound_never_pasted(conn: psycopg.Connection) -> None:
    hostile = "stig' OR 'x' = 'x"
    text = (AUDIT / "04_misleading_tips.sql").read_text(encoding="utf-8")
    statements = audit_file.parse_audit_file("04", text, {"skill": hostile})
    assert len(statements) == 2  # misleading_tips and harmful_when_followed
    for statement in statements:
        assert "%(skill)s" in statement.query and hostile not in statement.query
        assert statement.params == {"skill": hostile}
    for result in audit_store.run_audit_file(conn, "04", text, {"skill": hostile}):
        assert result.rows == []  # the whole string is one skill name that matches nothing
    conn.rollback()


def test_the_file_reader_follows_psql_and_refuses_what_it_cannot_follow() -> None:
    text = r"""\set ON_ERROR_STOP 1
\if :{?run}
\else
\set run ''
\endif
\if :{?rule}
-- section: ranking
SELECT :'rule';
\else
\echo 'no rule'
\endif
-- section: overview
SELECT 100 % 7, :'skill', :'run', 'NaN'::double precision;
"""
    (overview,) = audit_file.parse_audit_file("f", text, {"skill": "stig"})
    assert overview.key == "overview" and overview.params == {"skill": "stig", "run": ""}
    assert "100 %% 7" in overview.query
    ranking, overview = audit_file.parse_audit_file("f", text, {"skill": "stig", "rule": "r1", "run": "run-7"})
    assert ranking.params == {"rule": "r1"} and overview.params["run"] == "run-7"
    with pytest.raises(audit_file.AuditFileError, match="use :'name'"):
        audit_file.parse_audit_file("f", "-- section: x\nSELECT * FROM t LIMIT :top;", {"top": "3"})
    with pytest.raises(audit_file.AuditFileError, match="'skill' is not set"):
        audit_file.parse_audit_file("f", "-- section: x\nSELECT :'skill';", {})
    with pytest.raises(audit_file.AuditFileError, match="only"):
        audit_file.parse_audit_file("f", "\\if true\n\\endif", {})
    with pytest.raises(audit_file.AuditFileError, match="section"):
        audit_file.parse_audit_file("f", "SELECT 1;", {})
