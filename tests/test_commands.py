"""ctxgraph load, audit and evaluate on the bundled sample, against the real database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

from ctxgraph import evaluation, loader

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "stig"
RULE = "harden_sshd_macs_openssh_conf_crypto_policy"


def ctxgraph(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxgraph.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "CTXGRAPH_JUDGE_URL": "", **(env or {})}, timeout=600)


@pytest.fixture(scope="module")
def sample_skill(database_url: str) -> str:
    """A fresh skill holding the whole sample, loaded through the CLI and scored (embedding leg)."""
    skill = f"demo_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("SELECT ctxgraph.add_skill(%s, 'graded')", (skill,))
    for run in ("run-6", "run-7"):
        loaded = ctxgraph("load", "--skill", skill, "--tips", str(SAMPLE / "tips.jsonl"),
                          "--log", str(SAMPLE / f"{run}.jsonl"))
        assert loaded.returncode == 0, loaded.stderr
    for run in ("run-6", "run-7"):
        scored = ctxgraph("score", "--skill", skill, "--run", run, "--log", str(SAMPLE / f"{run}.jsonl"),
                          "--no-judge", "--quiet")
        assert scored.returncode == 0, scored.stderr
    return skill


def test_load_goes_through_the_write_path(sample_skill: str, conn: psycopg.Connection) -> None:
    counts = conn.execute(
        "SELECT count(*), count(attempt_id), count(outcome_value) FROM ctxgraph.tip_retrievals WHERE skill = %s",
        (sample_skill,)).fetchone()
    attempts = conn.execute("SELECT count(*), count(passed) FROM ctxgraph.attempts WHERE skill = %s",
                            (sample_skill,)).fetchone()
    conn.rollback()
    assert counts == (285, 285, 285)  # every retrieval linked to its attempt and given its outcome
    assert attempts == (79, 79)


def test_loading_a_run_twice_is_refused_and_keeps_nothing(sample_skill: str) -> None:
    again = ctxgraph("load", "--skill", sample_skill, "--tips", str(SAMPLE / "tips.jsonl"),
                     "--log", str(SAMPLE / "run-6.jsonl"))
    assert again.returncode == 2
    assert "already saved" in again.stderr and "nothing from that file was kept" in again.stderr


def test_a_bad_line_keeps_nothing_of_its_file(conn: psycopg.Connection, tmp_path: Path) -> None:
    skill = f"bad_{uuid.uuid4().hex[:6]}"
    conn.execute("SELECT ctxgraph.add_skill(%s, 'graded')", (skill,))
    conn.commit()
    tips = tmp_path / "tips.jsonl"
    tips.write_text(json.dumps({"tip_ref": "a", "rule_id": "r", "body": "Tip A."}) + "\n")
    log = tmp_path / "run.jsonl"
    log.write_text("\n".join([
        json.dumps({"type": "retrieval", "run_id": "r1", "rule_id": "r", "attempt_number": 1,
                    "retrieved_at": "2026-05-01T10:00:00Z", "tips": [{"tip_ref": "a", "similarity_score": 0.5}]}),
        json.dumps({"type": "attempt", "run_id": "r1", "rule_id": "r", "attempt_number": 1,
                    "started_at": "2026-05-01T10:00:05Z", "ended_at": "2026-05-01T10:01:00Z",
                    "result": {"passed": True}}),
        "{not json",
    ]) + "\n")
    refs = loader.load_tips(conn, skill, tips)
    with pytest.raises(loader.LoadError, match=r"run.jsonl:3: not a JSON line"):
        loader.load_run(conn, skill, log, refs)
    left = conn.execute("SELECT (SELECT count(*) FROM ctxgraph.attempts WHERE skill = %(s)s),"
                        " (SELECT count(*) FROM ctxgraph.tip_retrievals WHERE skill = %(s)s)", {"s": skill}).fetchone()
    conn.rollback()
    assert left == (0, 0)


def _state(conn: psycopg.Connection, skill: str) -> dict[str, list[tuple]]:
    """A skill's runs, attempts, retrievals (ids replaced by what they name) and tip_stats, sorted."""
    queries = {
        "runs": "SELECT id, started_at, ended_at FROM ctxgraph.runs WHERE skill = %(s)s",
        "attempts": "SELECT run_id, rule_id, attempt_number, passed, failure_mode, approach, started_at, ended_at"
                    " FROM ctxgraph.attempts WHERE skill = %(s)s",
        "retrievals": "SELECT r.run_id, r.rule_id, t.body, r.rank, r.similarity_score, a.attempt_number,"
                      " r.outcome_value, r.outcome_confidence, r.retrieved_at"
                      " FROM ctxgraph.tip_retrievals AS r JOIN ctxgraph.tips AS t ON t.skill = r.skill AND t.id = r.tip_id"
                      " LEFT JOIN ctxgraph.attempts AS a ON a.skill = r.skill AND a.id = r.attempt_id WHERE r.skill = %(s)s",
        "tip_stats": "SELECT t.body, s.retrievals, s.scored, s.attempts, round(s.outcome_sum::numeric, 9),"
                     " round(s.weighted_sum::numeric, 9), s.follow_known, s.followed, s.harm, s.last_retrieved_at"
                     " FROM ctxgraph.tip_stats AS s JOIN ctxgraph.tips AS t ON t.skill = s.skill AND t.id = s.tip_id"
                     " WHERE s.skill = %(s)s",
    }
    return {name: sorted(conn.execute(q, {"s": skill}).fetchall(), key=repr) for name, q in queries.items()}


def test_bulk_and_per_call_loads_leave_the_same_rows(conn: psycopg.Connection) -> None:
    skills = {True: f"bulk_{uuid.uuid4().hex[:6]}", False: f"call_{uuid.uuid4().hex[:6]}"}
    loaded = {}
    for bulk, skill in skills.items():
        conn.execute("SELECT ctxgraph.add_skill(%s, 'graded')", (skill,))
        refs = loader.load_tips(conn, skill, SAMPLE / "tips.jsonl")
        loaded[bulk] = [run for name in ("run-6", "run-7")
                        for run in loader.load_run(conn, skill, SAMPLE / f"{name}.jsonl", refs, bulk=bulk)]
    assert loaded[True] == loaded[False] == [loader.RunLoaded("run-6", 38, 133), loader.RunLoaded("run-7", 41, 152)]
    bulk_state, call_state = _state(conn, skills[True]), _state(conn, skills[False])
    conn.rollback()
    assert [len(bulk_state[k]) for k in ("runs", "attempts", "retrievals", "tip_stats")] == [2, 79, 285, 73]
    assert bulk_state == call_state


def _bad_log(tmp_path: Path, lines: list[str]) -> tuple[Path, Path]:
    tips = tmp_path / "tips.jsonl"
    tips.write_text(json.dumps({"tip_ref": "a", "rule_id": "r", "body": "Tip A."}) + "\n")
    log = tmp_path / "run.jsonl"
    log.write_text("\n".join(lines) + "\n")
    return tips, log


RETRIEVAL = json.dumps({"type": "retrieval", "run_id": "r1", "rule_id": "r", "attempt_number": 1,
                        "retrieved_at": "2026-05-01T10:00:00Z", "tips": [{"tip_ref": "a", "similarity_score": 0.5}]})


def test_a_line_the_write_path_refuses_is_named_and_nothing_is_kept(conn: psycopg.Connection, tmp_path: Path) -> None:
    skill = f"bad_{uuid.uuid4().hex[:6]}"
    conn.execute("SELECT ctxgraph.add_skill(%s, 'graded')", (skill,))
    conn.commit()
    tips, log = _bad_log(tmp_path, [
        RETRIEVAL,
        json.dumps({"type": "note", "text": "skipped"}),
        json.dumps({"type": "attempt", "run_id": "r1", "rule_id": "r", "attempt_number": 1,
                    "result": {"passed": False, "failure_mode": "cosmic_ray"}}),
        "{not json",  # after the refused line: the replay would never have reached it
    ])
    refs = loader.load_tips(conn, skill, tips)
    conn.commit()
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"run log line 3: unknown failure mode 'cosmic_ray'"):
        loader.load_run(conn, skill, log, refs)
    conn.rollback()
    left = conn.execute("SELECT (SELECT count(*) FROM ctxgraph.runs WHERE skill = %(s)s),"
                        " (SELECT count(*) FROM ctxgraph.tip_retrievals WHERE skill = %(s)s)", {"s": skill}).fetchone()
    conn.rollback()
    assert left == (0, 0)
    refused = ctxgraph("load", "--skill", skill, "--tips", str(tips), "--log", str(log))
    assert refused.returncode == 2
    assert "run log line 3: unknown failure mode" in refused.stderr and "(SQLSTATE 22023)" in refused.stderr


def test_audit_prints_every_section_and_the_rule_ranking(sample_skill: str) -> None:
    result = ctxgraph("audit", "--skill", sample_skill, "--rule", RULE, "--top", "5")
    assert result.returncode == 0, result.stderr
    for title in ("Overview: coverage per run", "Why follow columns are NULL", f"Ranker order for {RULE}",
                  "Top tips", "Bottom tips", "Misleading tips", "Harmful when followed",
                  "Followed while the system broke", "Eviction preview",
                  "Judge / embedding agreement", "Anomalies"):
        assert title in result.stdout
    assert "judge_not_configured" not in result.stdout  # --no-judge: disabled, not unconfigured
    assert "judge_disabled" in result.stdout
    only = ctxgraph("audit", "--skill", sample_skill, "--only", "overview")
    assert only.returncode == 0 and "Misleading" not in only.stdout and "run-7" in only.stdout
    bad = ctxgraph("audit", "--skill", sample_skill, "--only", "nosuch")
    assert bad.returncode == 2 and "unknown section nosuch" in bad.stderr
    unknown = ctxgraph("audit", "--skill", "nosuch")
    assert unknown.returncode == 2 and "unknown skill" in unknown.stderr


def test_audit_writes_a_self_contained_html_page(sample_skill: str, tmp_path: Path) -> None:
    page = tmp_path / "audit.html"
    result = ctxgraph("audit", "--skill", sample_skill, "--rule", RULE, "--html", str(page))
    assert result.returncode == 0, result.stderr
    html = page.read_text(encoding="utf-8")
    assert "<svg" in html and "http://" not in html.replace("http://www.w3.org", "")


def test_evaluate_reports_both_legs_against_the_gold_labels(sample_skill: str) -> None:
    result = ctxgraph("evaluate", "--skill", sample_skill, "--labels", str(SAMPLE / "gold_labels.csv"),
                      "--tips", str(SAMPLE / "tips.jsonl"))
    assert result.returncode == 0, result.stderr
    assert "285 labels, 285 retrievals matched" in result.stdout
    assert "embedding" in result.stdout and "auc" in result.stdout


def test_evaluate_figures_match_a_hand_count(sample_skill: str, conn: psycopg.Connection) -> None:
    labels = evaluation.read_labels(SAMPLE / "gold_labels.csv", SAMPLE / "tips.jsonl")
    result = evaluation.evaluate_labels(conn, sample_skill, labels)
    rows = {row[0]: dict(zip(result.columns, row)) for row in result.rows}
    assert rows["judge"]["covered"] == 0  # --no-judge
    emb = rows["embedding"]
    assert emb["labelled"] == emb["covered"] == 285
    # Recount accuracy at the threshold in Python from the same rows.
    pairs = conn.execute(
        "SELECT r.tip_followed_emb, a.run_id, a.rule_id, a.attempt_number, t.body FROM ctxgraph.tip_retrievals r"
        " JOIN ctxgraph.attempts a ON a.skill = r.skill AND a.id = r.attempt_id"
        " JOIN ctxgraph.tips t ON t.skill = r.skill AND t.id = r.tip_id WHERE r.skill = %s", (sample_skill,)).fetchall()
    conn.rollback()
    gold = {(lab["run_id"], lab["rule_id"], lab["attempt_number"], lab["tip_body"]): lab["followed"] for lab in labels}
    correct = sum((cos >= emb["threshold"]) == gold[(run, rule, n, body)] for cos, run, rule, n, body in pairs)
    assert emb["accuracy"] == pytest.approx(correct / len(pairs))
    assert 0.0 <= emb["auc"] <= 1.0 and emb["best_accuracy"] >= emb["accuracy"]


def test_label_files_are_checked(tmp_path: Path) -> None:
    bad = tmp_path / "labels.csv"
    bad.write_text("run_id,rule_id,attempt_number,tip_ref,followed\nrun-6,r,1,x,maybe\n")
    with pytest.raises(evaluation.LabelError, match="pass the tips file"):
        evaluation.read_labels(bad)
    with pytest.raises(evaluation.LabelError, match="followed must be true or false"):
        evaluation.read_labels(bad, SAMPLE / "tips.jsonl")
    none = tmp_path / "none.csv"
    none.write_text("a,b\n1,2\n")
    with pytest.raises(evaluation.LabelError, match="no 'followed' column"):
        evaluation.read_labels(none)


# -- Hostile lines: named, in both modes, nothing kept ------------------------------------------------
ATTEMPT = {"type": "attempt", "run_id": "r1", "rule_id": "r", "attempt_number": 1, "result": {"passed": True}}


def _retrieval(**changes: object) -> str:
    line = {**json.loads(RETRIEVAL), **changes}
    return json.dumps(line)


@pytest.mark.parametrize("bulk", [True, False], ids=["bulk", "per_call"])
@pytest.mark.parametrize("line, message", [
    ('{"type": "retrieval", "run_id": "r\\ud800", "rule_id": "r", "attempt_number": 1, '
     '"retrieved_at": "2026-05-01T10:00:00Z", "tips": [{"tip_ref": "a"}]}', "lone UTF-16 surrogate"),
    (json.dumps({**ATTEMPT, "approach": "a\u0000b"}), "NUL character"),
    ('{"type": "note", "nested": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    (_retrieval(tips=[{"tip_ref": ["a"]}]), r"unknown tip_ref \['a'\]"),
    (_retrieval(tips=[{"tip_ref": "a", "similarity_score": 10**400}]), "too large"),
    (json.dumps({**ATTEMPT, "attempt_number": 2**40}), "attempt_number 1099511627776 is out of range"),
    (json.dumps({**ATTEMPT, "attempt_number": "1"}), "attempt_number must be an integer, got '1'"),
], ids=["surrogate", "nul", "nesting", "tip_ref_list", "huge_score", "int8_attempt", "string_attempt"])
def test_a_hostile_line_is_named_in_both_modes_and_nothing_is_kept(conn: psycopg.Connection, tmp_path: Path,
                                                                   bulk: bool, line: str, message: str) -> None:
    """JSON the write path cannot take is the loader's to refuse, by line, whichever mode loads it:
    never a traceback, a client-side database error, or a value one mode takes and the other not."""
    skill = f"bad_{uuid.uuid4().hex[:6]}"
    conn.execute("SELECT ctxgraph.add_skill(%s, 'graded')", (skill,))
    conn.commit()
    tips, log = _bad_log(tmp_path, [RETRIEVAL, line])
    refs = loader.load_tips(conn, skill, tips)
    conn.commit()
    with pytest.raises(loader.LoadError, match=f"run.jsonl:2: .*{message}"):
        loader.load_run(conn, skill, log, refs, bulk=bulk)
    conn.rollback()
    left = conn.execute("SELECT (SELECT count(*) FROM ctxgraph.runs WHERE skill = %(s)s),"
                        " (SELECT count(*) FROM ctxgraph.tip_retrievals WHERE skill = %(s)s)", {"s": skill}).fetchone()
    conn.rollback()
    assert left == (0, 0)


def test_a_per_call_refusal_names_its_line(conn: psycopg.Connection, tmp_path: Path) -> None:
    """The per-call replay reports the write path's refusal at its line, as the bulk load does."""
    skill = f"bad_{uuid.uuid4().hex[:6]}"
    conn.execute("SELECT ctxgraph.add_skill(%s, 'graded')", (skill,))
    conn.commit()
    tips, log = _bad_log(tmp_path, [RETRIEVAL, json.dumps({**ATTEMPT, "attempt_number": -1})])
    refs = loader.load_tips(conn, skill, tips)
    conn.commit()
    with pytest.raises(loader.LoadError, match=r"run.jsonl:2: ctxgraph: attempt_number must be 1 or more.*SQLSTATE 22023"):
        loader.load_run(conn, skill, log, refs, bulk=False)
    conn.rollback()


def test_tips_and_logs_the_loader_cannot_read_are_refused(conn: psycopg.Connection, tmp_path: Path) -> None:
    skill = f"bad_{uuid.uuid4().hex[:6]}"
    conn.execute("SELECT ctxgraph.add_skill(%s, 'graded')", (skill,))
    conn.commit()
    listed = tmp_path / "tips.jsonl"
    listed.write_text(json.dumps({"tip_ref": "a", "rule_id": ["r"], "body": "Tip A."}) + "\n")
    with pytest.raises(loader.LoadError, match=r"tips.jsonl:1: rule_id must be a string, got \['r'\]"):
        loader.load_tips(conn, skill, listed)
    conn.rollback()
    assert conn.execute("SELECT count(*) FROM ctxgraph.tips WHERE skill = %s", (skill,)).fetchone()[0] == 0
    conn.rollback()
    with pytest.raises(loader.LoadError, match="cannot read"):
        loader.load_run(conn, skill, tmp_path, {})
    conn.rollback()
    refused = ctxgraph("load", "--skill", skill, "--tips", str(listed), "--log", str(tmp_path))
    assert refused.returncode == 2 and refused.stderr.strip() == f"ctxgraph load: not a file: {tmp_path}"


def test_audit_to_a_path_it_cannot_write_exits_2(sample_skill: str, tmp_path: Path) -> None:
    refused = ctxgraph("audit", "--skill", sample_skill, "--html", str(tmp_path))
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith(f"ctxgraph audit: cannot write {tmp_path}: ")


def test_label_files_that_are_not_utf8_csv_are_refused_and_a_bom_is_not_a_column(tmp_path: Path) -> None:
    good = (SAMPLE / "gold_labels.csv").read_text(encoding="utf-8")
    bom = tmp_path / "bom.csv"
    bom.write_text("\ufeff" + good, encoding="utf-8")
    assert evaluation.read_labels(bom, SAMPLE / "tips.jsonl") == evaluation.read_labels(
        SAMPLE / "gold_labels.csv", SAMPLE / "tips.jsonl")
    latin = tmp_path / "latin.csv"
    latin.write_bytes("followed,retrieval_id\ntrue,1\n".encode() + b"caf\xe9,2\n")
    with pytest.raises(evaluation.LabelError, match="not UTF-8 text"):
        evaluation.read_labels(latin)
    huge = tmp_path / "huge.csv"
    huge.write_text("followed,retrieval_id,note\ntrue,1," + "x" * 200_000 + "\n")
    with pytest.raises(evaluation.LabelError, match="not a CSV file"):
        evaluation.read_labels(huge)


def test_a_run_ending_before_it_starts_is_refused_at_its_line_in_both_modes(conn: psycopg.Connection,
                                                                            tmp_path: Path) -> None:
    skill = f"bad_{uuid.uuid4().hex[:6]}"
    conn.execute("SELECT ctxgraph.add_skill(%s, 'graded')", (skill,))
    conn.commit()
    tips, log = _bad_log(tmp_path, [RETRIEVAL, json.dumps({"type": "run_end", "run_id": "r1",
                                                           "ended_at": "2000-05-01T11:00:00Z"})])
    refs = loader.load_tips(conn, skill, tips)
    conn.commit()
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"run log line 2: run 'r1' ends .* before it starts"):
        loader.load_run(conn, skill, log, refs)
    conn.rollback()
    with pytest.raises(loader.LoadError, match=r"run.jsonl:2: .*runs_ends_after_start.*SQLSTATE 23514"):
        loader.load_run(conn, skill, log, refs, bulk=False)
    conn.rollback()
    assert conn.execute("SELECT count(*) FROM ctxgraph.runs WHERE skill = %s", (skill,)).fetchone()[0] == 0
    conn.rollback()
