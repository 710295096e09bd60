"""ctxgraph simulate: deterministic, validated, and right where the answer is obvious.

The simulations run on throwaway databases of the server DATABASE_URL points at: the CLI test deploys
one with sqitch as an operator's run would, the others clone one deployed template (deploying takes
most of a small world's time).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxgraph import simulate

ROOT = Path(__file__).resolve().parent.parent

# Small enough to run in seconds, big enough that two seeds cannot agree by chance.
SMALL = {
    "name": "small", "runs": 3, "rules": 8, "tips_per_rule": 4, "tips_per_attempt": 3, "max_attempts": 3,
    "tip_kinds": {"helpful": 0.5, "misleading": 0.25, "irrelevant": 0.25},
}


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "scorer")}
    return subprocess.run([sys.executable, "-m", "ctxgraph.cli", "simulate", *args], capture_output=True,
                          text=True, env=env, timeout=600, check=False)


@pytest.fixture(scope="module")
def template(database_url: str) -> Iterator[str]:
    name = simulate.create_template(database_url)
    try:
        yield name
    finally:
        simulate.drop_database(name, database_url)


def run(world: dict, seed: int, template: str, database_url: str) -> dict:
    return simulate.simulate(simulate.validate_world(world), seed, dsn=database_url, template=template).metrics


def test_the_same_seed_gives_identical_metrics(tmp_path: Path, template: str, database_url: str) -> None:
    """Once through the CLI (its own sqitch deploy), once through the API on a clone: the same bytes."""
    world = tmp_path / "small.json"
    world.write_text(json.dumps(SMALL))
    out = tmp_path / "metrics.json"
    done = cli("--world", str(world), "--seed", "7", "--json", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    assert "spearman hit_rate vs true value" in done.stdout
    assert "eviction precision" in done.stdout
    again = simulate.metrics_json(run(SMALL, 7, template, database_url))
    assert out.read_text() == again
    metrics = json.loads(again)
    assert metrics["truth"]["attempts"] > 0 and metrics["truth"]["retrievals"] > 0
    assert metrics["spearman"]["hit_rate"]["tips"] > 0


def test_a_different_seed_gives_different_data(template: str, database_url: str) -> None:
    one = run(SMALL, 1, template, database_url)
    two = run(SMALL, 2, template, database_url)
    assert one["truth"] != two["truth"] or one["per_tip"] != two["per_tip"]
    assert [t["kind"] for t in one["per_tip"]] != [t["kind"] for t in two["per_tip"]]


def test_obedient_worker_and_perfect_judge_rank_every_misleading_tip_below_every_helpful_one(
        template: str, database_url: str) -> None:
    """One tip per attempt, always followed, judged exactly: a misleading tip fails every attempt it is in
    (credit 0 or -0.2), a helpful one passes every attempt (base 0.5 + strength 0.5), so hit_rate must
    separate them completely."""
    world = {
        "name": "obvious", "runs": 2, "rules": 6, "tips_per_rule": 2, "tips_per_attempt": 1, "max_attempts": 3,
        "retrieval_noise": 0.5, "tip_kinds": {"helpful": 0.5, "misleading": 0.5}, "impossible_rules": 0,
        "base_pass_rate": [0.5, 0.5], "helpful_strength": [0.5, 0.5], "obedience": 1.0, "judge_accuracy": 1.0,
    }
    metrics = run(world, 3, template, database_url)
    helpful = [t["hit_rate"] for t in metrics["per_tip"] if t["kind"] == "helpful" and t["hit_rate"] is not None]
    misleading = [t["hit_rate"] for t in metrics["per_tip"]
                  if t["kind"] == "misleading" and t["hit_rate"] is not None]
    assert len(helpful) >= 2 and len(misleading) >= 2, metrics["per_tip"]
    assert max(misleading) < min(helpful), (misleading, helpful)
    assert metrics["spearman"]["hit_rate"]["spearman"] > 0.5


@pytest.mark.parametrize(("world", "message"), [
    ({"rulez": 3}, "ctxgraph simulate: unknown key 'rulez' (known keys: "),
    ({"tip_kinds": {"helpful": 0.5, "misleading": 0.3, "irrelevant": 0.3}},
     "ctxgraph simulate: tip_kinds shares must sum to 1, got 1.1 (helpful 0.5, misleading 0.3, irrelevant 0.3)"),
    ({"tip_kinds": {"helpful": 0.8, "harmful": 0.2}}, "ctxgraph simulate: unknown tip kind 'harmful' in tip_kinds"),
    ({"embedding": {"separation": 0.3, "spread": 0.1}}, "ctxgraph simulate: unknown key embedding.spread"),
    ({"tips_per_attempt": 7}, "ctxgraph simulate: tips_per_attempt (7) exceeds tips_per_rule (6)"),
    ({"obedience": [0.3, 0.5]}, "ctxgraph simulate: obedience lists one value per run: 6 runs, 2 values"),
    ({"judge_accuracy": 1.5}, "ctxgraph simulate: judge_accuracy must be a number from 0 to 1, got 1.5"),
])
def test_an_invalid_world_exits_2_with_one_clear_line(tmp_path: Path, world: dict, message: str) -> None:
    path = tmp_path / "world.json"
    path.write_text(json.dumps(world))
    done = cli("--world", str(path))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), done.stderr
    assert done.stdout == ""


def test_a_missing_or_broken_world_file_exits_2(tmp_path: Path) -> None:
    missing = cli("--world", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and missing.stderr.startswith("ctxgraph simulate: cannot read the world file")
    broken = tmp_path / "broken.json"
    broken.write_text("{\"rules\": 3,")
    done = cli("--world", str(broken))
    assert done.returncode == 2 and "is not JSON" in done.stderr, done.stderr


def test_an_unknown_parameter_is_refused_before_any_history(template: str, database_url: str) -> None:
    world = simulate.validate_world({**SMALL, "parameters": {"eviction.min_atempts": 4}})
    with pytest.raises(simulate.WorldError, match="unknown parameter 'eviction.min_atempts'"):
        simulate.simulate(world, 1, dsn=database_url, template=template)


def test_parameters_from_the_world_reach_the_database(template: str, database_url: str) -> None:
    """misleading_tips with impossible thresholds lists nothing; with permissive ones it lists tips."""
    strict = run({**SMALL, "parameters": {"misleading.min_attempts": 10_000}}, 5, template, database_url)
    loose = run({**SMALL, "parameters": {"misleading.min_attempts": 1, "misleading.min_outcome_hit_rate": -1,
                                         "misleading.max_follow_rate": 1}}, 5, template, database_url)
    assert strict["detectors"]["misleading_tips"]["listed"] == 0
    assert loose["detectors"]["misleading_tips"]["listed"] > 0


def test_the_default_world_file_is_the_documented_defaults() -> None:
    data = json.loads((ROOT / "samples" / "worlds" / "default.json").read_text())
    data.pop("description")
    assert data == {k: v for k, v in simulate.DEFAULTS.items() if k != "description"}
    world = simulate.load_world()
    assert (world.rules, world.tips_per_rule, world.tips_per_attempt, world.runs) == (40, 6, 5, 6)
    assert world.tip_kinds["misleading"] == 0.2
    assert world.obedience[0] == pytest.approx(0.3) and world.obedience[-1] == pytest.approx(0.7)


def test_spearman_uses_average_ranks_for_ties() -> None:
    assert simulate.average_ranks([10, 20, 20, 30]) == [1, 2.5, 2.5, 4]
    # Hand computed: ranks x = [1, 2.5, 2.5, 4], y = [1, 2, 3, 4]; r = 4.5 / sqrt(4.5 * 5).
    assert simulate.spearman([10, 20, 20, 30], [1, 2, 3, 4]) == pytest.approx(4.5 / (4.5 * 5) ** 0.5)
    assert simulate.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert simulate.spearman([1, 1, 1], [1, 2, 3]) is None
    assert simulate.spearman([1], [1]) is None


def test_world_files_that_are_not_utf8_json_or_hold_huge_numbers_are_world_errors(tmp_path: Path) -> None:
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"name": "caf\xe9"}')
    with pytest.raises(simulate.WorldError, match="is not UTF-8 text"):
        simulate.load_world(latin)
    deep = tmp_path / "deep.json"
    deep.write_text('{"name": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(simulate.WorldError, match="is not JSON: JSON nested too deeply"):
        simulate.load_world(deep)
    with pytest.raises(simulate.WorldError, match="parameters.effects.ridge_lambda must be a number"):
        simulate.validate_world({**SMALL, "parameters": {"effects.ridge_lambda": 10**400}})


# A world at every key's upper bound: about 2.5e9 retrievals, which ran until interrupted (issue 44).
HUGE = {"runs": 100, "rules": 5000, "tips_per_rule": 100, "tips_per_attempt": 100, "max_attempts": 50}
NOWHERE = "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"


def test_the_size_of_a_world_is_its_most_retrievals() -> None:
    world = simulate.validate_world(SMALL)
    assert simulate.most_retrievals(world) == 3 * 8 * 3 * 3
    assert simulate.most_retrievals(simulate.load_world()) == 6 * 40 * 5 * 5
    assert simulate.most_retrievals(simulate.validate_world(HUGE)) == 2_500_000_000
    assert simulate.MAX_RETRIEVALS == 10_000_000


def test_a_world_past_the_size_limit_is_refused_before_any_database_work() -> None:
    """The server named cannot be reached: a refusal (not a connection error) shows nothing was tried."""
    world = simulate.validate_world(HUGE)
    with pytest.raises(simulate.WorldTooLarge, match=r"up to 2,500,000,000 retrievals .* past the limit of "
                                                      r"10,000,000"):
        simulate.simulate(world, 1, dsn=NOWHERE)
    with pytest.raises(simulate.WorldTooLarge, match="up to 216 retrievals"):
        simulate.simulate(simulate.validate_world(SMALL), 1, dsn=NOWHERE, max_retrievals=215)


def test_the_cli_refuses_a_huge_world_with_exit_2_unless_told_otherwise(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(HUGE))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "scorer"), "DATABASE_URL": NOWHERE}

    def run_cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ctxgraph.cli", "simulate", "--world", str(path), *args],
                              capture_output=True, text=True, env=env, timeout=120, check=False)

    done = run_cli()
    assert done.returncode == 2, done.stderr
    assert done.stderr == ("ctxgraph simulate: the world can write up to 2,500,000,000 retrievals (100 runs x 5000 "
                           "rules x 50 attempts x 100 tips), past the limit of 10,000,000: raise it with "
                           "--max-retrievals N or lift it with --no-size-limit\n")
    assert done.stdout == ""
    assert run_cli("--max-retrievals", "2499999999").returncode == 2
    # Told otherwise, it goes on to the database (here unreachable: exit 3).
    for lifted in (["--max-retrievals", "2500000000"], ["--no-size-limit"]):
        done = run_cli(*lifted)
        assert done.returncode == 3 and "cannot connect" in done.stderr, (lifted, done.stderr)
    both = run_cli("--max-retrievals", "5", "--no-size-limit")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
