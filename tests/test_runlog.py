"""Tests for ctxgraph.runlog: tolerant JSONL reading and mapping retrievals to attempts."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from ctxgraph.runlog import (
    AttemptRecord,
    Problem,
    RunLog,
    ScriptIndex,
    line_list,
    parse_run_log,
    read_run_log,
)

DATA = Path(__file__).parent / "data" / "runlogs"
T0 = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)


def attempt(**overrides: Any) -> dict[str, Any]:
    line: dict[str, Any] = {
        "type": "attempt",
        "run_id": "run-7",
        "rule_id": "harden_x",
        "attempt_number": 1,
        "started_at": "2026-05-01T10:00:00Z",
        "ended_at": "2026-05-01T10:01:00Z",
        "fix_script": "#!/bin/bash\necho fix\n",
        "result": {"passed": False, "failure_mode": "clean_failure"},
    }
    for key, value in overrides.items():
        if value is _DROP:
            line.pop(key, None)
        else:
            line[key] = value
    return line


_DROP = object()


def lines(*objs: Any) -> list[bytes]:
    return [o if isinstance(o, bytes) else json.dumps(o).encode("utf-8") for o in objs]


def kinds(log: RunLog) -> list[str]:
    return [p.kind for p in log.problems]


# --- reading good lines ---------------------------------------------------------------------------


def test_attempt_line_is_read_with_every_field() -> None:
    log = parse_run_log(lines(attempt(attempt_id=123, extra_key={"ignored": True})))
    assert log.problems == []
    assert log.lines_read == 1
    assert log.attempts == [
        AttemptRecord(
            line_no=1,
            run_id="run-7",
            rule_id="harden_x",
            attempt_number=1,
            attempt_id=123,
            started_at=T0,
            ended_at=T0 + timedelta(minutes=1),
            fix_script="#!/bin/bash\necho fix\n",
            passed=False,
            failure_mode="clean_failure",
        )
    ]


def test_timestamps_are_aware_and_offsets_respected() -> None:
    log = parse_run_log(
        lines(attempt(started_at="2026-05-01T12:00:00+02:00", ended_at="2026-05-01T10:01:00.250Z"))
    )
    rec = log.attempts[0]
    assert rec.started_at is not None and rec.started_at.utcoffset() == timedelta(hours=2)
    assert rec.started_at == T0
    assert rec.ended_at == T0 + timedelta(minutes=1, milliseconds=250)
    assert log.problems == []


def test_optional_fields_may_be_absent() -> None:
    log = parse_run_log(
        lines(attempt(attempt_id=_DROP, started_at=_DROP, ended_at=_DROP, result=_DROP))
    )
    rec = log.attempts[0]
    assert (rec.attempt_id, rec.started_at, rec.ended_at, rec.passed, rec.failure_mode) == (
        None, None, None, None, None,
    )
    assert log.problems == []


def test_null_optionals_are_not_problems() -> None:
    result = {"passed": True, "failure_mode": None}
    log = parse_run_log(lines(attempt(attempt_id=None, ended_at=None, result=result)))
    assert log.problems == []
    assert log.attempts[0].passed is True


def test_whole_script_is_kept_verbatim() -> None:
    body = "".join(f"echo 'line {i} ünïcødé \\t \"q\"'\n" for i in range(40_000))
    script = "#!/bin/bash\n" + body + "\n\n  "
    assert len(script) > 1_000_000
    log = parse_run_log(lines(attempt(fix_script=script)))
    assert log.attempts[0].fix_script == script


def test_unknown_and_missing_types_are_skipped_and_counted() -> None:
    log = parse_run_log(
        lines(
            {"type": "run_start", "run_id": "run-7"},
            {"type": "retrieval", "tip_id": 1},
            {"type": "retrieval", "tip_id": 2},
            {"no_type": True},
            {"type": 5},
            attempt(),
        )
    )
    assert log.skipped_types == {"<missing>": 2, "retrieval": 2, "run_start": 1}
    assert len(log.attempts) == 1
    assert log.problems == []
    assert log.lines_read == 6


def test_blank_lines_crlf_and_bom_are_tolerated() -> None:
    raw = [
        b"\xef\xbb\xbf" + json.dumps({"type": "run_start"}).encode() + b"\r\n",
        b"\n",
        b"   \t \r\n",
        json.dumps(attempt()).encode() + b"\r\n",
        b"",
    ]
    log = parse_run_log(raw)
    assert log.problems == []
    assert len(log.attempts) == 1
    assert log.attempts[0].line_no == 4
    assert log.lines_read == 5


# --- problems -------------------------------------------------------------------------------------


def test_invalid_utf8_json_and_non_objects_are_problems_not_errors() -> None:
    log = parse_run_log(
        [
            b"\xff\xfe\x00garbage",
            b"{not json",
            b'{"type": "attempt"',
            b"[1, 2]",
            b'"a string"',
            b"42",
            b"null",
            json.dumps(attempt()).encode(),
        ]
    )
    assert kinds(log) == [
        "invalid_utf8", "invalid_json", "invalid_json",
        "not_object", "not_object", "not_object", "not_object",
    ]
    assert [p.line_no for p in log.problems] == [1, 2, 3, 4, 5, 6, 7]
    assert len(log.attempts) == 1 and log.attempts[0].line_no == 8


@pytest.mark.parametrize(
    ("overrides", "kind"),
    [
        ({"run_id": _DROP}, "missing_field"),
        ({"rule_id": _DROP}, "missing_field"),
        ({"attempt_number": _DROP}, "missing_field"),
        ({"attempt_number": None}, "missing_field"),
        ({"run_id": ""}, "bad_field"),
        ({"run_id": 7}, "bad_field"),
        ({"rule_id": ["x"]}, "bad_field"),
        ({"attempt_number": 0}, "bad_attempt_number"),
        ({"attempt_number": -1}, "bad_attempt_number"),
        ({"attempt_number": "1"}, "bad_attempt_number"),
        ({"attempt_number": 1.0}, "bad_attempt_number"),
        ({"attempt_number": 1.5}, "bad_attempt_number"),
        ({"attempt_number": True}, "bad_attempt_number"),
    ],
)
def test_attempt_without_usable_key_is_skipped(overrides: dict[str, Any], kind: str) -> None:
    log = parse_run_log(lines(attempt(**overrides)))
    assert log.attempts == []
    assert kinds(log) == [kind]
    assert log.problems[0].line_no == 1


def test_missing_script_keeps_record() -> None:
    log = parse_run_log(
        lines(
            attempt(fix_script=_DROP),
            attempt(attempt_number=2, fix_script=None),
            attempt(attempt_number=3, fix_script=17),
        )
    )
    assert [a.fix_script for a in log.attempts] == [None, None, None]
    assert kinds(log) == ["missing_script"] * 3


@pytest.mark.parametrize("script", ["", "   ", "\n\t\n"])
def test_empty_script_keeps_record_with_none(script: str) -> None:
    log = parse_run_log(lines(attempt(fix_script=script)))
    assert len(log.attempts) == 1 and log.attempts[0].fix_script is None
    assert kinds(log) == ["empty_script"]


@pytest.mark.parametrize(
    "value",
    ["yesterday", "2026-13-01T00:00:00Z", "2026-05-01T10:00:00", "2026-05-01", 1714557600, {"t": 1}],
)
def test_bad_timestamp_keeps_record_with_none(value: Any) -> None:
    log = parse_run_log(lines(attempt(started_at=value)))
    rec = log.attempts[0]
    assert rec.started_at is None
    assert rec.ended_at == T0 + timedelta(minutes=1)
    assert kinds(log) == ["bad_timestamp"]


def test_naive_timestamp_is_refused_not_guessed() -> None:
    log = parse_run_log(lines(attempt(ended_at="2026-05-01T10:01:00")))
    assert log.attempts[0].ended_at is None
    assert "no UTC offset" in log.problems[0].detail


def test_ended_before_started_is_reported_but_kept() -> None:
    log = parse_run_log(lines(attempt(started_at="2026-05-01T10:05:00Z", ended_at="2026-05-01T10:01:00Z")))
    assert kinds(log) == ["ended_before_started"]
    assert log.attempts[0].ended_at == T0 + timedelta(minutes=1)


@pytest.mark.parametrize(
    ("result", "passed", "mode"),
    [
        ("passed", None, None),
        ({"passed": "true", "failure_mode": "clean_failure"}, None, "clean_failure"),
        ({"passed": False, "failure_mode": 3}, False, None),
    ],
)
def test_bad_result_is_reported_and_kept(result: Any, passed: bool | None, mode: str | None) -> None:
    log = parse_run_log(lines(attempt(result=result)))
    assert kinds(log) == ["bad_result"]
    assert (log.attempts[0].passed, log.attempts[0].failure_mode) == (passed, mode)


@pytest.mark.parametrize("value", [0, -4, "123", 1.5, True])
def test_bad_attempt_id_is_reported_and_dropped(value: Any) -> None:
    log = parse_run_log(lines(attempt(attempt_id=value)))
    assert kinds(log) == ["bad_attempt_id"]
    assert log.attempts[0].attempt_id is None


def test_duplicate_attempt_uses_neither_copy_and_names_every_line() -> None:
    log = parse_run_log(
        lines(
            attempt(fix_script="first"),
            {"type": "retrieval"},
            attempt(fix_script="second"),
            attempt(rule_id="other", fix_script="different rule"),
            attempt(fix_script="third"),
        )
    )
    assert [a.fix_script for a in log.attempts] == ["different rule"]
    [problem] = log.problems
    assert problem.kind == "duplicate_attempt" and problem.line_no == 1
    assert problem.line_numbers == (1, 3, 5)
    assert "lines 1, 3, 5" in problem.detail
    assert log.problem_lines() == {"duplicate_attempt": [1, 3, 5]}


def test_duplicate_attempt_id_on_different_attempts_is_reported() -> None:
    log = parse_run_log(lines(attempt(attempt_id=5), attempt(attempt_number=2, attempt_id=5)))
    assert len(log.attempts) == 2
    assert kinds(log) == ["duplicate_attempt_id"]
    assert "line 1" in log.problems[0].detail
    assert ScriptIndex.from_run_log(log).by_attempt_id(5) is None


def test_several_problems_on_one_line_are_all_reported() -> None:
    log = parse_run_log(lines(attempt(fix_script="", started_at="bad", ended_at="worse", result=[])))
    assert sorted(kinds(log)) == ["bad_result", "bad_timestamp", "bad_timestamp", "empty_script"]
    assert len(log.attempts) == 1


def test_problem_summary_by_kind_with_line_numbers() -> None:
    log = parse_run_log([b"{", b"[]", b"{", json.dumps(attempt(fix_script="")).encode()])
    assert log.problems_by_kind() == {"empty_script": 1, "invalid_json": 2, "not_object": 1}
    assert log.problem_lines() == {"empty_script": [4], "invalid_json": [1, 3], "not_object": [2]}
    assert log.problem_summary() == (
        "4 problems: empty_script 1 (line 4), invalid_json 2 (lines 1, 3), not_object 1 (line 2)"
    )
    assert RunLog().problem_summary() == "no problems"


def test_truncated_last_line_is_named_with_its_line_number() -> None:
    whole = json.dumps(attempt()).encode() + b"\n"
    cut = json.dumps(attempt(attempt_number=2)).encode()[:40]
    log = parse_run_log([whole, cut])
    assert [(p.line_no, p.kind) for p in log.problems] == [(2, "truncated_line")]
    assert "line break" in log.problems[0].detail
    # The same bytes in the middle of a file, or a last line that ends with a break, are invalid JSON.
    log = parse_run_log([whole, cut + b"\n", whole.replace(b'"attempt_number": 1', b'"attempt_number": 3')])
    assert [(p.line_no, p.kind) for p in log.problems] == [(2, "invalid_json")]
    log = parse_run_log([whole, cut + b"\n"])
    assert [(p.line_no, p.kind) for p in log.problems] == [(2, "invalid_json")]


def test_line_list_spells_out_numbers_then_counts_the_rest() -> None:
    assert line_list([4]) == "line 4"
    assert line_list([9, 4, 4]) == "lines 4, 9"
    assert line_list(range(1, 26), shown=3) == "lines 1, 2, 3, ... (22 more)"


# --- filtering by run and reading files --------------------------------------------------------


def test_run_filter_keeps_one_run_and_its_problems() -> None:
    log = parse_run_log(
        lines(
            attempt(run_id="run-8", fix_script=""),
            attempt(run_id="run-7"),
            attempt(run_id="run-7", rule_id="r2", fix_script=None),
            attempt(run_id=_DROP),
            b"{oops",
            attempt(run_id="run-8"),
        ),
        run_id="run-7",
    )
    assert [(a.run_id, a.rule_id) for a in log.attempts] == [("run-7", "harden_x"), ("run-7", "r2")]
    # run-8's empty script and duplicate are not this run's business; unattributable lines are.
    assert [(p.line_no, p.kind) for p in log.problems] == [
        (3, "missing_script"), (4, "missing_field"), (5, "invalid_json"),
    ]


def test_read_run_log_from_file() -> None:
    log = read_run_log(DATA / "mixed.jsonl")
    assert log.lines_read == 10
    assert [(a.run_id, a.rule_id, a.attempt_number) for a in log.attempts] == [
        ("run-7", "harden_sshd_macs", 1),
        ("run-7", "harden_sshd_macs", 2),
        ("run-7", "audit_passwd", 1),
        ("run-8", "harden_sshd_macs", 1),
    ]
    assert [(p.line_no, p.kind) for p in log.problems] == [
        (5, "invalid_json"), (7, "invalid_utf8"), (8, "empty_script"),
    ]
    assert log.skipped_types == {"retrieval": 1, "run_end": 1, "run_start": 1}
    second = log.attempts[1]
    assert second.ended_at == datetime(2026, 5, 1, 10, 3, tzinfo=UTC)
    assert second.fix_script == "#!/bin/bash\nupdate-crypto-policies --set DEFAULT:STIG_MACS\n"


def test_read_run_log_filtered_by_run() -> None:
    log = read_run_log(str(DATA / "mixed.jsonl"), run_id="run-8")
    assert [a.attempt_id for a in log.attempts] == [201]
    assert [p.kind for p in log.problems] == ["invalid_json", "invalid_utf8"]


def test_missing_file_raises() -> None:
    with pytest.raises(FileNotFoundError):
        read_run_log(DATA / "no-such-file.jsonl")


def test_problem_is_a_plain_record() -> None:
    assert Problem(3, "invalid_json", "x") == Problem(3, "invalid_json", "x")


# --- ScriptIndex ----------------------------------------------------------------------------------


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def iso(minutes: float | None) -> str | None:
    return None if minutes is None else at(minutes).isoformat().replace("+00:00", "Z")


def index(*specs: tuple[int, float | None, float | None], rule: str = "harden_x") -> ScriptIndex:
    """Build an index from (attempt_number, started minute, ended minute) for one run and rule."""
    objs = [
        attempt(rule_id=rule, attempt_number=n, started_at=iso(s), ended_at=iso(e), fix_script=f"script {n}")
        for n, s, e in specs
    ]
    log = parse_run_log(lines(*objs))
    return ScriptIndex.from_run_log(log)


def window_number(idx: ScriptIndex, minutes: float, rule: str = "harden_x", run: str = "run-7") -> int | None:
    rec = idx.by_window(run, rule, at(minutes))
    return None if rec is None else rec.attempt_number


def test_lookup_by_attempt_id_and_number() -> None:
    log = read_run_log(DATA / "mixed.jsonl")
    idx = ScriptIndex.from_run_log(log)
    assert len(idx) == 4
    rec = idx.by_attempt_id(101)
    assert rec is not None and rec.attempt_number == 1 and rec.fix_script is not None
    assert "ssh_config" in rec.fix_script
    assert idx.by_attempt_id(999) is None
    assert idx.by_number("run-7", "harden_sshd_macs", 2) is log.attempts[1]
    assert idx.by_number("run-7", "harden_sshd_macs", 3) is None
    assert idx.by_number("run-9", "harden_sshd_macs", 1) is None
    # Found, but without a script: the caller can tell this apart from "no attempt".
    empty = idx.by_attempt_id(102)
    assert empty is not None and empty.fix_script is None


def test_window_rule_basic() -> None:
    # attempt 1: 10:00-10:02, attempt 2: 10:05-10:07, attempt 3: 10:10-10:12
    idx = index((1, 0, 2), (2, 5, 7), (3, 10, 12))
    assert window_number(idx, -600) == 1  # first window is open to the left
    assert window_number(idx, 0) == 1
    assert window_number(idx, 2) == 1  # closed on the right: the end itself belongs to the attempt
    assert window_number(idx, 2.001) == 2  # open on the left: just after attempt 1 ended
    assert window_number(idx, 4.9) == 2  # the usual case: retrieved just before attempt 2 starts
    assert window_number(idx, 7) == 2
    assert window_number(idx, 9) == 3
    assert window_number(idx, 12) == 3
    assert window_number(idx, 12.001) is None  # after the last known end
    assert window_number(idx, 1, rule="other_rule") is None
    assert window_number(idx, 1, run="run-8") is None


def test_window_order_is_attempt_number_not_file_position() -> None:
    idx = index((3, 10, 12), (1, 0, 2), (2, 5, 7))
    assert [window_number(idx, m) for m in (1, 4, 9)] == [1, 2, 3]


def test_window_accepts_other_timezones() -> None:
    idx = index((1, 0, 2), (2, 5, 7))
    plus_two = timezone(timedelta(hours=2))
    rec = idx.by_window("run-7", "harden_x", datetime(2026, 5, 1, 12, 4, tzinfo=plus_two))
    assert rec is not None and rec.attempt_number == 2


def test_missing_end_falls_back_to_own_start() -> None:
    # Attempt 1 has no ended_at. A retrieval at 10:04 was logged for attempt 2 (which starts 10:05):
    # using attempt 2's start as attempt 1's end would credit it to attempt 1; its own start does not.
    idx = index((1, 0, None), (2, 5, 7))
    assert window_number(idx, -1) == 1
    assert window_number(idx, 0) == 1
    assert window_number(idx, 0.5) == 2
    assert window_number(idx, 4.9) == 2
    assert window_number(idx, 7.5) is None


def test_last_attempt_without_end_ends_at_its_start() -> None:
    idx = index((1, 0, 2), (2, 5, None))
    assert window_number(idx, 4.9) == 2
    assert window_number(idx, 5) == 2
    assert window_number(idx, 5.1) is None


def test_attempt_without_any_timestamp_makes_adjacent_windows_unknown() -> None:
    idx = index((1, 0, 2), (2, None, None), (3, 10, 12))
    assert window_number(idx, 1) == 1
    assert window_number(idx, 4) is None  # attempt 2 or 3? unknowable, so nothing
    assert window_number(idx, 11) is None
    assert idx.by_number("run-7", "harden_x", 2) is not None


def test_gap_in_attempt_numbers_is_never_bridged() -> None:
    # Attempt 2's line is missing: retrievals between 10:02 and 10:12 might be attempt 2's.
    idx = index((1, 0, 2), (3, 10, 12))
    assert window_number(idx, 1) == 1
    assert window_number(idx, 9) is None
    assert window_number(idx, 11) is None


def test_first_known_attempt_above_one_is_not_open_left() -> None:
    idx = index((2, 5, 7), (3, 10, 12))
    assert window_number(idx, 4) is None
    assert window_number(idx, 9) == 3


def test_overlapping_windows_are_ambiguous() -> None:
    # Clock skew: attempt 2 "ends" (10:04) before attempt 1 does (10:06). Windows: 1 = (-inf, 6],
    # 2 = (6, 4] (empty), 3 = (4, 9]. Instants in both 1 and 3 get no answer rather than a guess.
    idx = index((1, 0, 6), (2, 3, 4), (3, 8, 9))
    assert window_number(idx, 3.5) == 1
    assert window_number(idx, 5) is None
    assert window_number(idx, 6) is None
    assert window_number(idx, 7) == 3


def test_duplicate_attempts_map_to_nothing_and_leave_a_gap() -> None:
    log = parse_run_log(
        lines(attempt(fix_script="first"), attempt(fix_script="second", ended_at="2026-05-01T11:00:00Z"),
              attempt(attempt_number=2, started_at=iso(62), ended_at=iso(64), fix_script="after"))
    )
    idx = ScriptIndex.from_run_log(log)
    assert idx.by_window("run-7", "harden_x", T0) is None
    assert idx.by_window("run-7", "harden_x", at(30)) is None
    assert idx.by_number("run-7", "harden_x", 1) is None
    # Attempt 2's lower bound is the end of attempt 1, which is not known: no window either.
    assert idx.by_window("run-7", "harden_x", at(63)) is None
    assert idx.by_number("run-7", "harden_x", 2) is not None


def test_index_given_duplicates_directly_uses_neither() -> None:
    first, second = (AttemptRecord(n, "run-7", "harden_x", 1, 7, T0, at(1), f"s{n}", None, None) for n in (1, 2))
    idx = ScriptIndex([first, second])
    assert idx.by_number("run-7", "harden_x", 1) is None
    assert idx.by_attempt_id(7) is None
    assert len(idx) == 0


def test_naive_retrieved_at_is_a_programming_error() -> None:
    idx = index((1, 0, 2))
    with pytest.raises(ValueError, match="timezone-aware"):
        idx.by_window("run-7", "harden_x", datetime(2026, 5, 1, 10, 0))


def test_index_accepts_plain_attempt_lists() -> None:
    rec = parse_run_log(lines(attempt(attempt_id=9))).attempts[0]
    idx = ScriptIndex([rec])
    assert idx.by_attempt_id(9) is rec


def test_lines_that_are_not_text_or_nest_too_deep_are_problems_not_failures() -> None:
    """A lone surrogate escape in a script (it could be neither hashed nor stored) and JSON nested
    past the parser's depth are each that line's problem; the other lines are read."""
    surrogate = json.dumps(attempt(attempt_number=1)).replace("echo fix", "echo \\ud800").encode()
    deep = b'{"type": "note", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    log = parse_run_log(lines(surrogate, deep, attempt(attempt_number=2)))
    assert kinds(log) == ["invalid_utf8", "invalid_json"]
    assert [p.line_no for p in log.problems] == [1, 2]
    assert [a.attempt_number for a in log.attempts] == [2]
