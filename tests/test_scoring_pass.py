"""The scoring pass against the real PostgreSQL, the real MiniLM model and a scripted judge server."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import psycopg
import pytest
from judge_stub_server import StubServer, content, http_error, verdict

from ctxgraph import scoring_pass
from ctxgraph.connection_store import connect

CRYPTO_TIP = "Use update-crypto-policies --set FUTURE and never edit /etc/ssh/ssh_config by hand."
HEREDOC_SCRIPT = """#!/usr/bin/env bash
set -euo pipefail
cp -a /etc/ssh/ssh_config /etc/ssh/ssh_config.bak.$(date +%s)
cat <<'EOF' > /etc/ssh/ssh_config
Host *
    MACs hmac-sha2-512,hmac-sha2-256
EOF
sshd -t && systemctl restart sshd
"""
POLICY_SCRIPT = """#!/usr/bin/env bash
set -euo pipefail
update-crypto-policies --set FUTURE
update-crypto-policies --show | grep -qx FUTURE
systemctl restart sshd
"""


def unique(text: str) -> str:
    """Tip texts unique per test, so the verdict cache never answers across tests."""
    return f"{text} [{uuid.uuid4().hex[:8]}]"


def config(run, **overrides) -> scoring_pass.PassConfig:
    options = dict(skill=run.skill, run_id=run.run_id, log_path=run.log_path, batch_size=64,
                   judge_timeout=2.0, judge_retries=1, judge_backoff=0.01)
    options.update(overrides)
    return scoring_pass.PassConfig(**options)


def columns(conn: psycopg.Connection, ids: list[int]) -> dict[int, tuple]:
    rows = conn.execute(
        "SELECT id, tip_followed_llm, tip_followed_emb, tip_followed_computed_at IS NOT NULL"
        " FROM ctxgraph.tip_retrievals WHERE id = ANY(%s) ORDER BY id",
        (ids,),
    ).fetchall()
    conn.commit()
    return {row[0]: row[1:] for row in rows}


def statuses(conn: psycopg.Connection, ids: list[int]) -> dict[int, tuple[str, str]]:
    rows = conn.execute(
        "SELECT retrieval_id, llm_status, emb_status FROM ctxgraph.retrieval_scores WHERE retrieval_id = ANY(%s)",
        (ids,),
    ).fetchall()
    conn.commit()
    return {row[0]: (row[1], row[2]) for row in rows}


def test_embedding_leg_alone_scores_every_row_once(conn, seed):
    run = seed([
        {"rule": "harden_sshd_macs", "tips": [unique(CRYPTO_TIP), unique("Back up files first.")],
         "script": HEREDOC_SCRIPT, "passed": True},
        {"rule": "harden_sshd_macs", "tips": [unique(CRYPTO_TIP)], "script": POLICY_SCRIPT,
         "passed": False, "failure_mode": "clean_failure"},
    ])
    summary = scoring_pass.run_pass(conn, config(run, use_judge=False))
    assert summary.claimed == 3 and summary.stamped == 3 and summary.emb_written == 3
    values = columns(conn, run.retrieval_ids)
    assert all(llm is None and emb is not None and -1 <= emb <= 1 and stamped
               for llm, emb, stamped in values.values())
    # the tips' vectors were cached in tips.embedding
    stored = conn.execute("SELECT count(*) FROM stig.tips WHERE id = ANY(%s) AND embedding IS NOT NULL",
                          ([t for a in run.attempts for t in a.tip_ids],)).fetchone()[0]
    assert stored == 3
    assert set(statuses(conn, run.retrieval_ids).values()) == {("judge_disabled", "computed")}
    # the pass ends by refitting the tip effects on the new follow weights
    tips = [t for a in run.attempts for t in a.tip_ids]
    assert summary.effects_fitted is not None and summary.effects_fitted >= len(set(tips))
    fitted = conn.execute("SELECT count(*) FROM stig.tip_hit_rates WHERE tip_id = ANY(%s) AND effect IS NOT NULL",
                          (tips,)).fetchone()[0]
    conn.commit()
    assert fitted == len(set(tips))
    again = scoring_pass.run_pass(conn, config(run, use_judge=False))
    assert again.claimed == 0 and again.stamped == 0 and again.effects_fitted is None


def test_judge_leg_writes_verdicts_caches_them_and_records_provenance(conn, seed):
    tip = unique(CRYPTO_TIP)
    run = seed([{"rule": "harden_sshd_macs", "tips": [tip], "script": HEREDOC_SCRIPT},
                {"rule": "harden_sshd_macs", "tips": [unique("Restart sshd after changes.")],
                 "script": POLICY_SCRIPT}])
    with StubServer() as server:
        server.responder = lambda request: verdict(
            "update-crypto-policies" not in request.messages[-1]["content"] or "never edit" not in
            request.messages[-1]["content"])
        summary = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, use_embed=False))
        asked = len(server.chat_requests())
    assert summary.llm_written == 2 and summary.stamped == 2 and summary.judge_calls == 2
    assert asked == 2
    assert summary.judge_model
    provenance = conn.execute(
        "SELECT DISTINCT judge_model, length(prompt_sha256), embed_model FROM ctxgraph.retrieval_scores"
        " WHERE retrieval_id = ANY(%s)", (run.retrieval_ids,)).fetchall()
    conn.commit()
    assert provenance == [(summary.judge_model, 64, None)]

    # The same tip and script in another run: answered from the cache, nothing asked.
    rerun = seed([{"rule": "harden_sshd_macs", "tips": [tip], "script": HEREDOC_SCRIPT}])
    conn.execute("UPDATE stig.tips SET body = %s WHERE id = %s", (tip, rerun.attempts[0].tip_ids[0]))
    conn.commit()
    with StubServer() as server:
        server.responder = lambda request: pytest.fail("the cache should have answered")
        cached = scoring_pass.run_pass(conn, config(rerun, judge_url=server.base_url, use_embed=False))
        assert server.chat_requests() == []
    assert cached.judge_cache_hits == 1 and cached.judge_calls == 0 and cached.llm_written == 1


def test_missing_script_is_recorded_and_left_for_the_next_pass(conn, seed):
    run = seed([{"rule": "audit_rules", "tips": [unique("Use augenrules --load.")], "script": None}])
    summary = scoring_pass.run_pass(conn, config(run, use_judge=False))
    assert summary.stamped == 0 and summary.emb_written == 0 and summary.left_for_retry == 1
    assert list(columns(conn, run.retrieval_ids).values()) == [(None, None, False)]
    assert list(statuses(conn, run.retrieval_ids).values()) == [("judge_disabled", "no_script")]
    assert summary.emb_status == {"no_script": 1} and summary.retry_reasons == {"no_script": 1}
    assert "left for the next pass by reason: no_script 1" in summary.render()


def test_transient_judge_failures_stay_unscored_and_the_next_pass_finishes(conn, seed):
    run = seed([{"rule": "sysctl", "tips": [unique("Write /etc/sysctl.d/99-stig.conf and run sysctl --system.")],
                 "script": "#!/usr/bin/env bash\nset -euo pipefail\necho 'kernel.kptr_restrict = 1' > "
                           "/etc/sysctl.d/99-stig.conf\nsysctl --system\n"}])
    with StubServer() as server:
        server.responder = lambda request: http_error(503)
        first = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, judge_model="stub-model"))
    assert first.stamped == 0 and first.claimed == 1 and first.emb_written == 1
    llm, emb, stamped = columns(conn, run.retrieval_ids)[run.retrieval_ids[0]]
    assert llm is None and emb is not None and not stamped
    assert statuses(conn, run.retrieval_ids)[run.retrieval_ids[0]][0] == "http_error"

    with StubServer() as server:
        server.responder = lambda request: verdict(True)
        second = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, judge_model="stub-model"))
    assert second.stamped == 1 and second.llm_written == 1
    assert columns(conn, run.retrieval_ids)[run.retrieval_ids[0]][0] is True


def test_unparseable_verdict_is_cached_and_not_asked_again(conn, seed):
    run = seed([{"rule": "pam", "tips": [unique("Enable faillock with authselect.")],
                 "script": "authselect enable-feature with-faillock\n"}])
    with StubServer() as server:
        server.responder = lambda request: content('The answer is: "followed": true')
        first = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, judge_model="stub-model",
                                            use_embed=False))
    assert first.stamped == 1 and first.llm_written == 0
    assert first.llm_status == {"unparseable": 1}
    error = conn.execute("SELECT error FROM ctxgraph.follow_verdicts WHERE model = 'stub-model' AND error IS NOT NULL"
                         " AND created_at > now() - interval '1 hour'").fetchall()
    conn.commit()
    assert ("unparseable",) in error


def test_unlinked_rows_map_by_attempt_window(conn, seed):
    tips = [unique(CRYPTO_TIP), unique(CRYPTO_TIP)]
    run = seed([
        {"rule": "harden_sshd_macs", "tips": [tips[0]], "script": HEREDOC_SCRIPT, "passed": False,
         "failure_mode": "clean_failure"},
        {"rule": "harden_sshd_macs", "tips": [tips[1]], "script": POLICY_SCRIPT},
    ], link=False)
    with StubServer() as server:
        seen: list[str] = []

        def answer(request):
            seen.append(request.messages[-1]["content"])
            return verdict(True)

        server.responder = answer
        summary = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, use_embed=False))
    assert summary.stamped == 2 and summary.llm_written == 2
    script_of = {tip: next(text for text in seen if tip in text).split("<<<SCRIPT", 1)[1] for tip in tips}
    assert "cat <<'EOF'" in script_of[tips[0]] and "update-crypto-policies" not in script_of[tips[0]]
    assert "update-crypto-policies --set FUTURE" in script_of[tips[1]]


def test_whole_script_reaches_the_judge_untruncated(conn, seed):
    long_script = "#!/usr/bin/env bash\nset -euo pipefail\n" + "".join(
        f"grep -q '^setting_{n} ' /etc/x.conf || echo 'setting_{n} on' >> /etc/x.conf\n" for n in range(400)
    ) + "echo THE-END-MARKER\n"
    run = seed([{"rule": "long", "tips": [unique("Append settings idempotently.")], "script": long_script}])
    with StubServer() as server:
        server.responder = lambda request: verdict(True)
        scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, use_embed=False))
        text = server.chat_requests()[0].messages[-1]["content"]
    assert "THE-END-MARKER" in text and "setting_399 on" in text


def test_two_passes_at_once_never_score_a_row_twice(database_url, seed):
    attempts = [{"rule": f"rule_{n % 7}", "tips": [unique(f"Tip number {n}."), unique(f"Other tip {n}.")],
                 "script": f"#!/usr/bin/env bash\necho fix {n}\n"} for n in range(30)]
    run = seed(attempts)
    calls: list[str] = []
    lock = threading.Lock()

    def answer(request):
        with lock:
            calls.append(request.messages[-1]["content"])
        return verdict(True)

    results: list[scoring_pass.PassSummary] = []
    with StubServer() as server:
        server.responder = answer

        def one_pass() -> None:
            connection = connect(database_url)
            try:
                results.append(scoring_pass.run_pass(connection, config(run, judge_url=server.base_url, use_embed=False,
                                                                 batch_size=8)))
            finally:
                connection.close()

        threads = [threading.Thread(target=one_pass) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    assert sum(r.stamped for r in results) == 60
    assert len(calls) == 60 == len(set(calls))
