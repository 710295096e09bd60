"""The lexical follow signal (hard cases), its calibration, and the judge cascade's accounting."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from ctxgraph import calibration as cal
from ctxgraph.follow_signal import agreement, extract_script, extract_tip

ROOT = Path(__file__).resolve().parents[1]

CRYPTO_TIP = ("Never put a MACs line into /etc/ssh/ssh_config; change MACs only with "
              "`update-crypto-policies --set FIPS` and confirm with `update-crypto-policies --show`.")
HEREDOC_SSH_CONFIG = """#!/usr/bin/env bash
set -euo pipefail
cp -a /etc/ssh/ssh_config /etc/ssh/ssh_config.bak
cat > /etc/ssh/ssh_config <<'EOF'
Host *
    MACs hmac-sha2-512,hmac-sha2-256
EOF
systemctl restart sshd
"""
POLICY = """#!/usr/bin/env bash
set -euo pipefail
# /etc/ssh/ssh_config stays untouched: the policy back-end owns the MACs
update-crypto-policies \\
    --set FIPS
update-crypto-policies --show | grep -qx FIPS
grep -i '^MACs' /etc/ssh/ssh_config || true
"""
DROPIN_TIP = "Set `PermitRootLogin no` in a drop-in such as /etc/ssh/sshd_config.d/00-stig.conf rather than editing sshd_config."
DROPIN_SCRIPT = """#!/usr/bin/env bash
set -euo pipefail
install -d -m 0755 /etc/ssh/sshd_config.d
printf 'PermitRootLogin no\\n' > /etc/ssh/sshd_config.d/00-stig.conf
sshd -t && systemctl reload sshd
"""
MAIN_FILE_SCRIPT = """#!/usr/bin/env bash
set -euo pipefail
sed -i 's/^#\\?PermitRootLogin.*/PermitRootLogin no/' /etc/ssh/sshd_config
sshd -t && systemctl reload sshd
"""
VALIDATE_TIP = "Validate the sshd configuration with `sshd -t` before reloading sshd."


def probability(tip: str, script: str, cosine: float | None = 0.5) -> float:
    features = agreement(extract_tip(tip), extract_script(script))
    return cal.DEFAULT.probability(cal.design_row(features.values, cosine))


def matched(tip: str, script: str, side: str = "prescribed") -> dict[str, float]:
    evidence = agreement(extract_tip(tip), extract_script(script)).evidence[side]
    return {item["text"]: item["matched"] for item in evidence}


def test_tip_says_never_x_and_the_script_does_x():
    tip = extract_tip(CRYPTO_TIP)
    assert any(i.text == "/etc/ssh/ssh_config" for i in tip.warned)
    assert any(i.text.startswith("update-crypto-policies --set") for i in tip.prescribed)
    assert matched(CRYPTO_TIP, HEREDOC_SSH_CONFIG, "warned")["/etc/ssh/ssh_config"] == 1.0
    # The policy script only reads ssh_config (grep) and names it in a comment: not an edit.
    assert matched(CRYPTO_TIP, POLICY, "warned")["/etc/ssh/ssh_config"] == 0.0
    assert probability(CRYPTO_TIP, POLICY) > 0.5 > probability(CRYPTO_TIP, HEREDOC_SSH_CONFIG)


def test_same_file_opposite_approach():
    # Both scripts set PermitRootLogin no; only one writes the drop-in the tip names.
    assert matched(DROPIN_TIP, DROPIN_SCRIPT)["/etc/ssh/sshd_config.d/00-stig.conf"] == 1.0
    assert matched(DROPIN_TIP, MAIN_FILE_SCRIPT)["/etc/ssh/sshd_config.d/00-stig.conf"] == 0.0
    assert probability(DROPIN_TIP, DROPIN_SCRIPT) > probability(DROPIN_TIP, MAIN_FILE_SCRIPT)


def test_a_comment_claiming_to_follow_is_not_code():
    script = """#!/usr/bin/env bash
set -euo pipefail
# validated with sshd -t as the guidance says
echo "config validated with sshd -t"
systemctl reload sshd
"""
    assert matched(VALIDATE_TIP, script)["sshd -t"] == 0.0
    followed = script.replace("systemctl reload sshd", "sshd -t && systemctl reload sshd")
    assert matched(VALIDATE_TIP, followed)["sshd -t"] == 1.0
    assert probability(VALIDATE_TIP, followed) > probability(VALIDATE_TIP, script)


def test_a_heredoc_that_writes_the_advised_file_counts_as_content():
    tip = "Put `-e 2` as the last rule in /etc/audit/rules.d/99-finalize.rules and load it with `augenrules --load`."
    script = """#!/usr/bin/env bash
set -euo pipefail
RULES=/etc/audit/rules.d/99-finalize.rules
cat > "$RULES" <<'EOF'
-e 2
EOF
augenrules --load
"""
    found = matched(tip, script)
    assert found["/etc/audit/rules.d/99-finalize.rules"] == 1.0   # through the variable
    assert found["-e 2"] == 1.0                                      # the heredoc body is file content
    assert found["augenrules --load"] == 1.0


def test_functions_count_only_when_called_and_messages_never():
    never_called = """#!/usr/bin/env bash
set -euo pipefail
validate() {
    sshd -t
}
log() { printf '%s\\n' "$*" >&2; }
log "remember to run sshd -t"
systemctl reload sshd
"""
    assert matched(VALIDATE_TIP, never_called)["sshd -t"] == 0.0
    called = never_called.replace("systemctl reload sshd", "validate\nsystemctl reload sshd")
    assert matched(VALIDATE_TIP, called)["sshd -t"] == 1.0


def test_echo_into_a_file_is_content_but_echo_to_the_terminal_is_not():
    tip = "Set `MaxAuthTries 4` in /etc/ssh/sshd_config.d/00-stig.conf."
    to_file = "echo 'MaxAuthTries 4' >> /etc/ssh/sshd_config.d/00-stig.conf\n"
    to_terminal = "echo 'set MaxAuthTries 4 in /etc/ssh/sshd_config.d/00-stig.conf by hand'\n"
    assert matched(tip, to_file)["MaxAuthTries 4"] == 1.0
    assert matched(tip, to_terminal) == {k: 0.0 for k in matched(tip, to_terminal)}


def test_the_default_calibration_is_the_fit_on_the_sample_gold_labels():
    pytest.importorskip("sentence_transformers")
    sys.path.insert(0, str(ROOT / "bench"))
    import follow_signal_auc as bench

    pairs = bench.gold_pairs()
    x = bench.design(pairs, bench.cosines(pairs, None))
    y = np.array([p["followed"] for p in pairs], dtype=float)
    coefficients, intercept = cal.fit(x, y, 1.0)
    assert len(pairs) == cal.DEFAULT.examples and int(y.sum()) == cal.DEFAULT.positives
    assert np.allclose(coefficients, cal.DEFAULT.coefficients, atol=2e-4)
    assert abs(intercept - cal.DEFAULT.intercept) < 2e-4


def test_cascade_band_keeps_disagreement_under_the_rate():
    rng = np.random.default_rng(7)
    p = rng.uniform(size=400)
    labels = rng.uniform(size=400) < p            # calibrated by construction
    low, high = cal.cascade_band(p.tolist(), labels.tolist(), 0.05)
    outside = (p < low) | (p > high)
    assert ((p[outside] >= 0.5) != labels[outside]).sum() / len(p) <= 0.05
    assert low <= 0.5 <= high
    # A perfect signal needs no judge at all; a useless one needs it everywhere.
    assert cal.cascade_band([0.1, 0.9], [False, True], 0.0) == (0.5, 0.5)
    low, high = cal.cascade_band([0.9, 0.1], [False, True], 0.0)
    assert low <= 0.1 and high >= 0.9


def test_cross_validation_never_scores_a_rule_with_its_own_labels():
    x = np.array([[0.0], [1.0], [0.0], [1.0], [0.0], [1.0]])
    y = np.array([0.0, 1.0, 0.0, 1.0, 1.0, 0.0])
    groups = ["a", "a", "b", "b", "c", "c"]
    predictions, folds = cal.cross_validate(x, y, groups, folds=3)
    assert folds == 3
    # Rule c contradicts a and b: scored by a model fitted on a and b only, it is ranked backwards.
    assert predictions[5] > predictions[4]


# --- against the database: the calibration round trip and the cascade's accounting --------------------

SCRIPTS = {
    True: POLICY,
    False: HEREDOC_SSH_CONFIG,
}


def seed_crypto_run(seed, rules: int = 6):
    attempts = []
    for n in range(rules):
        for followed in (True, False):
            attempts.append({"rule": f"crypto_{n}", "tips": [f"{CRYPTO_TIP} [{uuid.uuid4().hex[:8]}]"],
                             "script": SCRIPTS[followed], "passed": followed,
                             "failure_mode": None if followed else "clean_failure"})
    return seed(attempts)


def test_calibration_round_trip_on_judge_verdicts(conn, seed):
    from judge_stub_server import StubServer, verdict

    from ctxgraph import evaluation, scoring_pass
    from ctxgraph.store import Client

    run = seed_crypto_run(seed)
    with StubServer() as server:
        server.responder = lambda request: verdict("cat > /etc/ssh/ssh_config" not in request.messages[-1]["content"])
        first = scoring_pass.run_pass(conn, scoring_pass.PassConfig(
            skill=run.skill, run_id=run.run_id, log_path=run.log_path, judge_url=server.base_url, use_embed=False))
    assert first.signal_written == len(run.retrieval_ids)
    assert first.calibration is not None and "calibration" in first.calibration
    result = evaluation.calibrate(conn, run.skill, None, max_disagreement=0.05)
    conn.commit()
    stored = Client(conn).current_follow_calibration(run.skill, "lexical-1")
    conn.commit()
    assert stored["calibration_id"] == result.calibration.calibration_id
    assert stored["fitted_on"] == "judge" and stored["examples"] >= len(run.retrieval_ids)
    assert list(stored["feature_names"]) == list(cal.feature_names())
    assert cal.Calibration.from_row(stored).coefficients == pytest.approx(result.calibration.coefficients)

    # The next pass uses it and says so per row.
    again = seed_crypto_run(seed, rules=1)
    summary = scoring_pass.run_pass(conn, scoring_pass.PassConfig(
        skill=again.skill, run_id=again.run_id, log_path=again.log_path, use_judge=False, use_embed=False))
    assert f"calibration {stored['calibration_id']}" in summary.calibration
    used = conn.execute("SELECT DISTINCT calibration_id, signal_status FROM ctxgraph.retrieval_scores"
                        " WHERE retrieval_id = ANY(%s)", (again.retrieval_ids,)).fetchall()
    probabilities = conn.execute("SELECT follow_probability FROM ctxgraph.tip_retrievals WHERE id = ANY(%s)"
                                 " ORDER BY id", (again.retrieval_ids,)).fetchall()
    conn.commit()
    assert used == [(stored["calibration_id"], "computed")]
    assert probabilities[0][0] > 0.5 > probabilities[1][0]


def test_cascade_asks_the_judge_only_inside_the_band(conn, seed):
    from judge_stub_server import StubServer, verdict

    from ctxgraph import scoring_pass
    from ctxgraph.store import Client

    run = seed_crypto_run(seed, rules=3)
    skill = run.skill
    # A band that no probability of these two scripts falls into: every row is decided by the signal.
    Client(conn).save_follow_calibration(
        skill, "lexical-1", "logistic", cal.feature_names(), cal.DEFAULT.coefficients, cal.DEFAULT.intercept,
        "labels", "test: a narrow band", 10, 5, 0.9, 0.8, 2, 0.4999, 0.5001, 0.05)
    conn.commit()
    with StubServer() as server:
        server.responder = lambda request: verdict(True)
        summary = scoring_pass.run_pass(conn, scoring_pass.PassConfig(
            skill=skill, run_id=run.run_id, log_path=run.log_path, judge_url=server.base_url, use_embed=False,
            judge_policy="uncertain"))
        asked = len(server.chat_requests())
    assert asked == summary.judge_calls == 0
    assert summary.judge_calls_saved == len(run.retrieval_ids)
    rows = conn.execute("SELECT s.llm_status, r.tip_followed_llm, r.tip_followed_computed_at IS NOT NULL"
                        " FROM ctxgraph.retrieval_scores AS s JOIN ctxgraph.tip_retrievals AS r"
                        "   ON r.skill = s.skill AND r.id = s.retrieval_id WHERE s.retrieval_id = ANY(%s)",
                        (run.retrieval_ids,)).fetchall()
    conn.commit()
    assert set(rows) == {("decided_by_signal", None, True)}

    # A band covering everything: the judge is asked for every row, nothing saved.
    Client(conn).save_follow_calibration(
        skill, "lexical-1", "logistic", cal.feature_names(), cal.DEFAULT.coefficients, cal.DEFAULT.intercept,
        "labels", "test: the whole range", 10, 5, 0.9, 0.8, 2, 0.0, 1.0, 0.0)
    conn.commit()
    wide = seed_crypto_run(seed, rules=2)
    with StubServer() as server:
        server.responder = lambda request: verdict(True)
        summary = scoring_pass.run_pass(conn, scoring_pass.PassConfig(
            skill=skill, run_id=wide.run_id, log_path=wide.log_path, judge_url=server.base_url, use_embed=False,
            judge_policy="uncertain"))
        asked = len(server.chat_requests())
    assert asked == summary.judge_calls == len(wide.retrieval_ids) and summary.judge_calls_saved == 0
