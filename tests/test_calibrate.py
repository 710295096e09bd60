"""ctxgraph calibrate stores only a fit it can stand behind: enough labels of each class, and a
cross-validated figure; anything less is refused (exit 2) and the calibration in force stays."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from test_follow_signal import CRYPTO_TIP, HEREDOC_SSH_CONFIG, POLICY

from ctxgraph.follow_signal import calibration as cal
from ctxgraph.cli import main
from ctxgraph.follow_signal import SIGNAL_VERSION


def labelled_run(conn, seed, tmp_path: Path, followed: int, ignored: int, rules: int) -> Path:
    """A run scored by the follow signal alone (no judge, no cosine) and a labels file naming each of
    its retrievals by id: ``followed`` scripts that follow the tip, ``ignored`` that do not, dealt
    over ``rules`` rules."""
    from ctxgraph import scoring_pass

    prefix = f"calib_{uuid.uuid4().hex[:6]}"
    kinds = [True] * followed + [False] * ignored
    run = seed([{"rule": f"{prefix}_{n % rules}", "tips": [f"{CRYPTO_TIP} [{uuid.uuid4().hex[:8]}]"],
                 "script": POLICY if kind else HEREDOC_SSH_CONFIG, "passed": kind,
                 "failure_mode": None if kind else "clean_failure"} for n, kind in enumerate(kinds)])
    scoring_pass.run_pass(conn, scoring_pass.PassConfig(skill=run.skill, run_id=run.run_id, log_path=run.log_path,
                                                        use_judge=False, use_embed=False))
    labels = tmp_path / f"{prefix}.csv"
    labels.write_text("retrieval_id,followed\n" + "".join(
        f"{a.retrieval_ids[0]},{'true' if kind else 'false'}\n" for a, kind in zip(run.attempts, kinds, strict=True)))
    return labels


def in_force(conn) -> int | None:
    from ctxgraph.client import Client

    row = Client(conn).current_follow_calibration("stig", SIGNAL_VERSION)
    conn.commit()
    return None if row is None else row["calibration_id"]


def test_calibrate_refuses_fewer_labels_of_a_class_than_the_minimum(conn, seed, tmp_path: Path, capsys) -> None:
    """One followed and one ignored label stored a calibration the next pass used (issue 44, finding 5)."""
    before = in_force(conn)
    two = labelled_run(conn, seed, tmp_path, 1, 1, rules=2)
    assert main(["calibrate", "--skill", "stig", "--labels", str(two)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ctxgraph calibrate: too few labels to calibrate on: 1 followed and 1 ignored"), err
    assert "at least 20 of each are needed (--min-per-class)" in err and len(err.splitlines()) == 1
    # A dry run refuses the same, and one class short is named as such.
    assert main(["calibrate", "--skill", "stig", "--labels", str(two), "--dry-run"]) == 2
    assert "1 followed and 1 ignored" in capsys.readouterr().err
    lopsided = labelled_run(conn, seed, tmp_path, 25, 3, rules=5)
    assert main(["calibrate", "--skill", "stig", "--labels", str(lopsided)]) == 2
    assert "25 followed and 3 ignored" in capsys.readouterr().err
    assert in_force(conn) == before
    assert cal.MIN_PER_CLASS == 20


def test_the_minimum_is_a_parameter(conn, seed, tmp_path: Path, capsys) -> None:
    labels = labelled_run(conn, seed, tmp_path, 6, 6, rules=3)
    assert main(["calibrate", "--skill", "stig", "--labels", str(labels), "--min-per-class", "7", "--dry-run"]) == 2
    assert "6 followed and 6 ignored" in capsys.readouterr().err
    assert main(["calibrate", "--skill", "stig", "--labels", str(labels), "--min-per-class", "6", "--dry-run"]) == 0
    assert "not stored (--dry-run)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        main(["calibrate", "--skill", "stig", "--labels", str(labels), "--min-per-class", "0"])
    assert refused.value.code == 2 and "must be 1 or more" in capsys.readouterr().err


def test_calibrate_refuses_a_fit_it_cannot_cross_validate(conn, seed, tmp_path: Path, capsys) -> None:
    """Labels on one rule: cross-validation by rule has no fold to score, so no calibration is put in force."""
    from ctxgraph import evaluation

    before = in_force(conn)
    one_rule = labelled_run(conn, seed, tmp_path, 20, 20, rules=1)
    assert main(["calibrate", "--skill", "stig", "--labels", str(one_rule)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ctxgraph calibrate: no cross-validated figure"), err
    assert "40 examples on 1 rule" in err and len(err.splitlines()) == 1
    labels = evaluation.read_labels(one_rule)
    with pytest.raises(evaluation.LabelError, match="no cross-validated figure"):
        evaluation.calibrate(conn, "stig", labels, save=True)
    conn.rollback()
    assert in_force(conn) == before


def test_enough_labels_over_several_rules_store_a_cross_validated_calibration(conn, seed, tmp_path: Path,
                                                                              capsys) -> None:
    labels = labelled_run(conn, seed, tmp_path, 20, 20, rules=5)
    assert main(["calibrate", "--skill", "stig", "--labels", str(labels)]) == 0
    out = capsys.readouterr().out
    assert "40 examples (20 followed)" in out and "ROC AUC -" not in out
    from ctxgraph.client import Client

    stored = Client(conn).current_follow_calibration("stig", SIGNAL_VERSION)
    conn.commit()
    assert stored is not None and stored["examples"] == 40 and stored["positives"] == 20
    assert stored["cv_auc"] is not None and stored["cv_accuracy"] is not None and stored["cv_folds"] >= 2
    # Fitted on two scripts only: later tests of the skill should not be scored by it.
    conn.execute("DELETE FROM ctxgraph.follow_calibrations WHERE calibration_id = %s", (stored["calibration_id"],))
    conn.commit()
