"""One giant fix script costs the follow signal a bounded amount of reading, whatever its size."""

from __future__ import annotations

from ctxgraph import follow_signal
from ctxgraph.follow_signal import MAX_SCRIPT_CHARS, bounded_script, extract_script, extract_tip

HEAD = "#!/usr/bin/env bash\nset -euo pipefail\ncp -a /etc/ssh/sshd_config /etc/ssh/sshd_config.bak\n"
TAIL = "sshd -t\nsystemctl restart sshd\n"


def giant(megabytes: float) -> str:
    middle = "".join(f"grep -q '^Setting{n} ' /etc/x.conf || echo 'Setting{n} yes' >> /etc/x.conf\n"
                     for n in range(int(megabytes * 1e6 / 70)))
    cut = middle.index("\n", len(middle) // 2) + 1
    return HEAD + middle[:cut] + "update-crypto-policies --set LEGACY\n" + middle[cut:] + TAIL


def test_a_script_within_the_cap_is_read_whole() -> None:
    script = HEAD + TAIL
    assert bounded_script(script) == (script, False)
    assert extract_script(script).capped is False


def test_past_the_cap_the_head_and_the_tail_are_read_in_whole_lines() -> None:
    script = giant(3)
    read, capped = bounded_script(script)
    assert capped and len(read) <= MAX_SCRIPT_CHARS + 1
    assert read.startswith(HEAD) and read.endswith(TAIL)
    whole = set(script.splitlines())
    assert all(line in whole for line in read.splitlines()), "only whole lines are read"
    assert "update-crypto-policies --set LEGACY" not in read


def test_a_26_mb_script_gets_a_signal_from_a_bounded_view() -> None:
    script = giant(26)
    assert len(script) > 100 * MAX_SCRIPT_CHARS
    view = extract_script(script)
    assert view.capped and len(view.text) <= MAX_SCRIPT_CHARS
    tip = extract_tip("Run `sshd -t` before `systemctl restart sshd`; never run "
                      "`update-crypto-policies --set LEGACY`.")
    features = follow_signal.agreement(tip, view)
    assert features.values["prescribed_share"] == 1.0
    assert features.values["order_broken"] == 0.0


def test_a_line_longer_than_half_the_cap_is_cut_not_read_whole() -> None:
    script = "x" * (3 * MAX_SCRIPT_CHARS)
    read, capped = bounded_script(script)
    assert capped and len(read) <= MAX_SCRIPT_CHARS + 1


def test_a_pass_over_a_giant_script_stamps_its_rows_from_bounded_reads(conn, seed) -> None:
    from ctxgraph import scoring_pass

    script = giant(6)
    run = seed([{"rule": "giant", "tips": ["Run `sshd -t` before `systemctl restart sshd`."], "script": script}])
    summary = scoring_pass.run_pass(conn, scoring_pass.PassConfig(
        skill=run.skill, run_id=run.run_id, log_path=run.log_path, use_judge=False, max_chunks=4))
    assert summary.stamped == 1 and summary.emb_written == 1 and summary.signal_written == 1
    assert summary.scripts_capped == 1 and summary.chunks_distinct == 4
    evidence = conn.execute("SELECT follow_evidence FROM ctxgraph.retrieval_scores WHERE retrieval_id = %s",
                            (run.retrieval_ids[0],)).fetchone()[0]
    conn.commit()
    matched = {text: share for _, text, share in evidence["prescribed"]}
    assert matched["sshd -t"] == 1 and matched["systemctl restart sshd"] == 1  # read in the script's tail
