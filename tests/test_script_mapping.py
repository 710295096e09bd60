"""Which script a retrieval is judged against: a log's attempt_id only when it names that attempt.

Unit tests of runlog.ScriptIndex.attempt_for, then the scoring pass against the real database with a
judge stub that records the script each tip was judged against.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from judge_stub_server import StubServer, verdict

from ctxgraph import scoring_pass
from ctxgraph.runlog import ScriptIndex, parse_run_log

T0 = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Row:
    retrieval_id: int
    run_id: str
    rule_id: str
    attempt_id: int | None
    attempt_number: int | None
    retrieved_at: datetime


def line(rule: str, number: int, attempt_id: int | None, script: str, minute: int = 0) -> bytes:
    obj = {"type": "attempt", "run_id": "run-7", "rule_id": rule, "attempt_number": number,
           "started_at": (T0 + timedelta(minutes=minute)).isoformat(),
           "ended_at": (T0 + timedelta(minutes=minute + 2)).isoformat(), "fix_script": script}
    if attempt_id is not None:
        obj["attempt_id"] = attempt_id
    return json.dumps(obj).encode() + b"\n"


def test_an_attempt_id_naming_another_attempt_is_not_trusted() -> None:
    # Line 1 says it is rule a attempt 1 with id 20; the database's id 20 is rule b attempt 1.
    index = ScriptIndex.from_run_log(parse_run_log([line("a", 1, 20, "script a"), line("b", 1, 10, "script b")]))
    found = index.attempt_for(Row(1, "run-7", "b", 20, 1, T0))
    assert found is not None and found.fix_script == "script b"
    found = index.attempt_for(Row(2, "run-7", "a", 10, 1, T0))
    assert found is not None and found.fix_script == "script a"
    assert index.mapping_counts() == {"attempt_number": 2}
    assert [(p.line_no, p.kind) for p in index.mismatches()] == [(1, "attempt_id_mismatch"), (2, "attempt_id_mismatch")]
    assert "attempt_id 20 is run 'run-7' rule 'b' attempt 1 in the database" in index.mismatches()[0].detail


def test_an_attempt_id_that_matches_is_used() -> None:
    index = ScriptIndex.from_run_log(parse_run_log([line("a", 1, 10, "script a"), line("a", 2, 11, "again", 5)]))
    found = index.attempt_for(Row(1, "run-7", "a", 11, 2, T0))
    assert found is not None and found.fix_script == "again"
    assert index.mapping_counts() == {"attempt_id": 1} and index.mismatches() == []


def test_a_linked_row_never_falls_back_on_another_attempt_of_its_rule() -> None:
    # The database says attempt 2; the log has only attempt 1 (whose id is wrong) and an attempt 3.
    index = ScriptIndex.from_run_log(parse_run_log([line("a", 1, 11, "one"), line("a", 3, None, "three", 10)]))
    assert index.attempt_for(Row(1, "run-7", "a", 11, 2, T0 + timedelta(minutes=1))) is None
    assert index.mapping_counts() == {"unknown": 1}
    assert [p.line_no for p in index.mismatches()] == [1]


def test_unlinked_rows_map_by_window_and_every_lookup_is_counted_once() -> None:
    index = ScriptIndex.from_run_log(parse_run_log([line("a", 1, None, "one"), line("a", 2, None, "two", 5)]))
    row = Row(1, "run-7", "a", None, None, T0 + timedelta(minutes=4))
    assert index.attempt_for(row).fix_script == "two"
    assert index.attempt_for(row).fix_script == "two"
    assert index.attempt_for(Row(2, "run-7", "a", None, None, T0 + timedelta(minutes=60))) is None
    assert index.mapping_counts() == {"window": 1, "unknown": 1}


def test_duplicate_attempt_lines_are_reported_with_every_line_and_used_for_nothing() -> None:
    log = parse_run_log([line("a", 1, 10, "first"), line("b", 1, 12, "b"), line("a", 1, 10, "second")])
    index = ScriptIndex.from_run_log(log)
    assert index.attempt_for(Row(1, "run-7", "a", 10, 1, T0)) is None
    assert index.attempt_for(Row(2, "run-7", "a", None, None, T0)) is None
    report = index.report_lines()
    assert report[0] == ("run-log problems (lines skipped, incomplete or not trusted): "
                         "duplicate_attempt 1 (lines 1, 3)")
    assert report[1] == "scripts found: attempt unknown 2"


def unique(text: str) -> str:
    return f"{text} [{uuid.uuid4().hex[:8]}]"


def judged_scripts(server: StubServer) -> dict[str, str]:
    """For each tip text the judge was asked about, the script block it was shown."""
    out: dict[str, str] = {}
    for request in server.chat_requests():
        text = request.messages[-1]["content"]
        tip = text.split("<<<TIP", 1)[1].split("TIP>>>", 1)[0].strip()
        out[tip] = text.split("<<<SCRIPT", 1)[1].split("SCRIPT>>>", 1)[0].strip()
    return out


def rewrite_log(run, edit) -> None:
    objs = [json.loads(text) for text in run.log_path.read_text().splitlines()]
    objs = edit(objs)
    run.log_path.write_text("".join(json.dumps(o) + "\n" for o in objs))


def config(run, server: StubServer) -> scoring_pass.PassConfig:
    return scoring_pass.PassConfig(skill=run.skill, run_id=run.run_id, log_path=run.log_path,
                                   judge_url=server.base_url, judge_timeout=5.0, judge_retries=0,
                                   use_embed=False, use_signal=False)


def test_a_log_whose_attempt_ids_point_at_other_attempts_judges_each_row_against_its_own_script(conn, seed):
    specs = [{"rule": f"rule_{n}", "tips": [unique(f"Tip for rule {n}.")], "script": f"echo script-{n}\n"}
             for n in range(4)]
    run = seed(specs, log_attempt_ids=True)

    def rotate(objs):  # every line's attempt_id is the next attempt's
        ids = [o["attempt_id"] for o in objs]
        for o, other in zip(objs, ids[1:] + ids[:1]):
            o["attempt_id"] = other
        return objs

    rewrite_log(run, rotate)
    with StubServer() as server:
        server.responder = lambda request: verdict(True)
        summary = scoring_pass.run_pass(conn, config(run, server))
        shown = judged_scripts(server)
    assert summary.llm_written == 4
    for n, seeded in enumerate(run.attempts):
        tip = conn.execute("SELECT body FROM stig.tips WHERE id = %s", (seeded.tip_ids[0],)).fetchone()[0]
        assert shown[tip] == f"echo script-{n}"
    conn.commit()
    rendered = summary.render()
    assert "attempt_id_mismatch 4 (lines 1, 2, 3, 4)" in rendered
    assert "scripts found: by attempt number 4" in rendered


def test_duplicate_attempt_lines_are_not_guessed_by_the_pass(conn, seed):
    run = seed([{"rule": "dup", "tips": [unique("Tip for the duplicated attempt.")], "script": "echo real\n"},
                {"rule": "other", "tips": [unique("Tip for the other rule.")], "script": "echo other\n"}],
               log_attempt_ids=True)

    def duplicate(objs):
        copy = dict(objs[0], fix_script="echo impostor\n")
        return [objs[0], objs[1], copy]

    rewrite_log(run, duplicate)
    with StubServer() as server:
        server.responder = lambda request: verdict(True)
        summary = scoring_pass.run_pass(conn, config(run, server))
        shown = judged_scripts(server)
    assert list(shown.values()) == ["echo other"]
    rendered = summary.render()
    assert "duplicate_attempt 1 (lines 1, 3)" in rendered
    assert "scripts found: by attempt_id 1, attempt unknown 1" in rendered


def test_the_pass_summary_names_the_line_of_every_log_problem(conn, seed):
    run = seed([{"rule": "lines", "tips": [unique("Tip for the line numbers.")], "script": "echo ok\n"}],
               extra_log_lines=["{not json", '{"type": "attempt", "run_id": 7}'])
    with run.log_path.open("a") as log:
        log.write('{"type": "attempt", "run_id": "' + run.run_id + '", "rule_id": "lines", "attem')
    summary = scoring_pass.run_pass(conn, scoring_pass.PassConfig(
        skill=run.skill, run_id=run.run_id, log_path=run.log_path, use_judge=False, use_embed=False))
    rendered = summary.render()
    assert ("run-log problems (lines skipped, incomplete or not trusted): bad_field 1 (line 2), "
            "invalid_json 1 (line 1), missing_field 2 (line 2), truncated_line 1 (line 4)") in rendered
    assert "scripts found: by attempt number 1" in rendered or "scripts found: by window 1" in rendered
