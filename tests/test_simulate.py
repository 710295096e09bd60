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

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

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
    ({"misleading_failure": -0.1},
     "ctxgraph simulate: misleading_failure must be a number from 0 to 1, got -0.1"),
    ({"general_tips": {"count": 2, "per_attempt": 3}},
     "ctxgraph simulate: general_tips.per_attempt (3) exceeds general_tips.count (2)"),
])
def test_an_invalid_world_exits_2_with_one_clear_line(tmp_path: Path, world: dict, message: str) -> None:
    path = tmp_path / "world.json"
    path.write_text(json.dumps(world))
    done = cli("--world", str(path))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(("world", "message"), [
    ({"misleading_failure": 1.5}, "misleading_failure must be a number from 0 to 1, got 1.5"),
    ({"misleading_failure": "0.7"}, "misleading_failure must be a number from 0 to 1, got '0.7'"),
    ({"misleading_failure": True}, "misleading_failure must be a number from 0 to 1, got True"),
    ({"misleading_failure": None}, "misleading_failure must be a number from 0 to 1, got None"),
    ({"general_tips": 12}, "general_tips must be an object with keys count, per_attempt, tip_kinds"),
    ({"general_tips": {"count": 4, "per_tip": 1}},
     "unknown key general_tips.per_tip (known: count, per_attempt, tip_kinds)"),
    ({"general_tips": {"count": -1}}, "general_tips.count must be a whole number from 0 to 1000, got -1"),
    ({"general_tips": {"count": 2.5}}, "general_tips.count must be a whole number from 0 to 1000, got 2.5"),
    ({"general_tips": {"count": 1001}}, "general_tips.count must be a whole number from 0 to 1000, got 1001"),
    ({"general_tips": {"count": 4, "per_attempt": True}},
     "general_tips.per_attempt must be a whole number from 0 to 100, got True"),
    ({"general_tips": {"count": 200, "per_attempt": 101}},
     "general_tips.per_attempt must be a whole number from 0 to 100, got 101"),
    ({"general_tips": {"count": 4, "per_attempt": 5}},
     "general_tips.per_attempt (5) exceeds general_tips.count (4)"),
    ({"general_tips": {"per_attempt": 1}}, "general_tips.per_attempt (1) exceeds general_tips.count (0)"),
    ({"general_tips": {"count": 4, "tip_kinds": [0.5, 0.5]}}, "general_tips.tip_kinds must be an object"),
    ({"general_tips": {"count": 4, "tip_kinds": {"harmful": 1}}},
     "unknown tip kind 'harmful' in general_tips.tip_kinds (known: helpful, misleading, irrelevant)"),
    ({"general_tips": {"count": 4, "tip_kinds": {"helpful": 2}}},
     "general_tips.tip_kinds.helpful must be a number from 0 to 1, got 2"),
    ({"general_tips": {"count": 4, "tip_kinds": {"helpful": 0.5}}},
     "general_tips.tip_kinds shares must sum to 1, got 0.5 (helpful 0.5, misleading 0, irrelevant 0)"),
])
def test_the_nuisance_keys_are_validated_like_the_others(world: dict, message: str) -> None:
    with pytest.raises(simulate.WorldError) as caught:
        simulate.validate_world(world)
    assert str(caught.value).startswith(message), str(caught.value)


def test_the_nuisance_keys_default_to_changing_nothing() -> None:
    """Left out, or spelled out at their defaults, they make the same world, and the JSON's world holds them
    only when they change something; general tips take the world's tip kinds unless given their own."""
    plain = simulate.validate_world({})
    spelled = simulate.validate_world({"misleading_failure": 1, "general_tips": {
        "count": 0, "per_attempt": 0, "tip_kinds": {"helpful": 1.0}}})
    assert (plain.misleading_failure, plain.general_tips, plain.general_per_attempt) == (1.0, 0, 0)
    assert spelled == plain
    assert simulate.world_json(spelled) == simulate.world_json(plain)
    assert set(simulate.world_json(plain)) == set(simulate.DEFAULTS)
    general = simulate.validate_world({"misleading_failure": 0.7,
                                       "general_tips": {"count": 12, "per_attempt": 2}})
    assert general.general_kinds == general.tip_kinds
    shown = simulate.world_json(general)
    assert shown["misleading_failure"] == 0.7
    assert shown["general_tips"] == {"count": 12, "per_attempt": 2,
                                     "tip_kinds": simulate.DEFAULTS["tip_kinds"]}
    assert simulate.validate_world(shown) == general
    own = simulate.validate_world({"general_tips": {"count": 3, "tip_kinds": {"misleading": 1}}})
    assert own.general_kinds == {"helpful": 0.0, "misleading": 1.0, "irrelevant": 0.0}


def test_the_nuisance_worlds_are_valid_and_say_what_is_wrong() -> None:
    nuisance = simulate.load_world(ROOT / "samples" / "worlds" / "nuisance.json")
    assert (nuisance.judge_accuracy, nuisance.misleading_failure,
            nuisance.impossible_rules) == (0.8, 0.7, 0.2)
    assert (nuisance.general_tips, nuisance.general_per_attempt) == (12, 2)
    mild = simulate.load_world(ROOT / "samples" / "worlds" / "nuisance_mild.json")
    assert (mild.judge_accuracy, mild.misleading_failure, mild.impossible_rules) == (0.85, 0.85, 0.15)
    assert (mild.general_tips, mild.general_per_attempt) == (8, 1)
    default = simulate.load_world()
    same = ("skill", "runs", "rules", "tips_per_rule", "tip_kinds", "helpful_strength", "true_value",
            "tips_per_attempt", "retrieval_noise", "max_attempts", "base_pass_rate", "obedience",
            "harm_probability", "embedding_only", "embedding", "parameters")
    for world in (nuisance, mild):  # everything else is the default world's
        assert {k: getattr(world, k) for k in same} == {k: getattr(default, k) for k in same}


class CountingRandom:
    """A stand-in for random.Random that returns fixed values and counts the draws."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)
        self.draws = 0

    def random(self) -> float:
        self.draws += 1
        return self.values.pop(0)


def test_misleading_failure_draws_only_between_0_and_1_and_in_the_order_shown() -> None:
    rule = simulate.SimRule(0, "sim_rule_001", 0.5, False)
    bad = simulate.SimTip(0, "r001-t1", 0, "misleading", 0.0, -1.0, 0.7)
    good = simulate.SimTip(1, "r001-t2", 0, "helpful", 0.3, 0.3, 0.7)
    worse = simulate.SimTip(2, "r001-t3", 0, "misleading", 0.0, -1.0, 0.7)

    def outcome(failure: float, rng: CountingRandom, shown=(bad, good, worse), followed=(True, True, True)):
        world = simulate.validate_world({"misleading_failure": failure, "harm_probability": 0.5})
        return simulate._outcome(world, rule, list(shown), list(followed), rng)  # type: ignore[arg-type]

    # At 1 (the default) no draw decides whether it fails: the one draw is the harm draw, as before the key.
    rng = CountingRandom(0.2)
    assert outcome(1.0, rng) == (False, "health_failure", True) and rng.draws == 1
    # At 0.7: the first misleading tip is spared (0.9), the second fails it (0.1), then the harm draw.
    rng = CountingRandom(0.9, 0.1, 0.8)
    assert outcome(0.7, rng) == (False, "clean_failure", True) and rng.draws == 3
    # Both spared: the outcome is drawn as if no misleading tip had been followed (0.5 + 0.3 > 0.75).
    rng = CountingRandom(0.9, 0.95, 0.75)
    assert outcome(0.7, rng) == (True, None, False) and rng.draws == 3
    # At 0 no draw for the misleading tips; an ignored misleading tip takes no draw at any value.
    rng = CountingRandom(0.85)
    assert outcome(0.0, rng) == (False, "clean_failure", False) and rng.draws == 1
    rng = CountingRandom(0.1)
    assert outcome(0.7, rng, followed=(False, True, False)) == (True, None, False) and rng.draws == 1
    # A rule failing for everyone still fails when every misleading tip spares it.
    rng = CountingRandom(0.0)
    assert simulate._outcome(simulate.validate_world({"misleading_failure": 0}),
                             simulate.SimRule(0, "sim_rule_001", 0.0, True), [bad, good], [True, True],
                             rng) == (False, "clean_failure", False)  # type: ignore[arg-type]


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
    general = simulate.validate_world({**SMALL, "general_tips": {"count": 5, "per_attempt": 2}})
    assert simulate.most_retrievals(general) == 3 * 8 * 3 * (3 + 2)
    with pytest.raises(simulate.WorldTooLarge,
                       match=r"up to 360 retrievals \(3 runs x 8 rules x 3 attempts x "
                             r"5 \(3 \+ 2 general\) tips\), past the limit of 359"):
        simulate.check_size(general, 359)
    simulate.check_size(general, 360)
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


def test_general_tips_have_no_rule_and_are_retrieved_beside_every_attempts_rule_tips(
        template: str, database_url: str) -> None:
    """rule_id NULL in ctxgraph.tips; every attempt logs its rule's 3 tips (ranks 1-3), then 2 general tips
    (ranks 4-5), all under the attempt's rule_id; and they are measured like the rule tips."""
    world = simulate.validate_world({**SMALL, "general_tips": {"count": 5, "per_attempt": 2}})
    result = simulate.simulate(world, 4, dsn=database_url, template=template, keep_database=True)
    try:
        with psycopg.connect(make_conninfo(database_url, dbname=result.database)) as conn:
            general = conn.execute("SELECT count(*) FROM ctxgraph.tips WHERE skill = 'stig' "
                                   "AND rule_id IS NULL AND body LIKE 'Simulated general tip gen-t%'"
                                   ).fetchone()[0]
            rule_tips = conn.execute("SELECT count(*) FROM ctxgraph.tips WHERE skill = 'stig' "
                                     "AND rule_id IS NOT NULL").fetchone()[0]
            attempts = conn.execute(
                """
                SELECT a.id, a.rule_id,
                       count(*) FILTER (WHERE t.rule_id = a.rule_id),
                       array_agg(r.rank ORDER BY r.rank) FILTER (WHERE t.rule_id IS NULL),
                       bool_and(r.rule_id = a.rule_id)
                  FROM ctxgraph.attempts AS a
                  JOIN ctxgraph.tip_retrievals AS r ON r.skill = a.skill AND r.attempt_id = a.id
                  JOIN ctxgraph.tips AS t ON t.skill = r.skill AND t.id = r.tip_id
                 WHERE a.skill = 'stig'
                 GROUP BY a.id, a.rule_id
                """).fetchall()
    finally:
        simulate.drop_database(result.database, database_url)
    m = result.metrics
    assert (general, rule_tips) == (5, 8 * 4)
    assert len(attempts) == m["truth"]["attempts"] > 0
    for attempt_id, rule_id, own, general_ranks, same_rule in attempts:
        assert (own, general_ranks, same_rule) == (3, [4, 5], True), (attempt_id, rule_id)
    assert m["truth"]["tips"] == 8 * 4 + 5
    assert sum(m["truth"]["tips_by_kind"].values()) == 8 * 4 + 5
    assert m["truth"]["general_tips"]["retrievals"] == 2 * m["truth"]["attempts"]
    assert m["truth"]["retrievals"] == 5 * m["truth"]["attempts"]
    refs = [t["ref"] for t in m["per_tip"]]
    assert refs[-5:] == [f"gen-t{i}" for i in range(1, 6)]
    assert any(t["hit_rate"] is not None for t in m["per_tip"][-5:])
    assert m["world"]["general_tips"] == {"count": 5, "per_attempt": 2, "tip_kinds": SMALL["tip_kinds"]}
    assert "+ 2 general" in result.text and "5 of them general" in result.text


ALL_MISLEADING = {
    "name": "all misleading", "runs": 1, "rules": 4, "tips_per_rule": 2, "tips_per_attempt": 2,
    "max_attempts": 2, "tip_kinds": {"misleading": 1.0}, "obedience": 1.0, "impossible_rules": 0.25,
    "base_pass_rate": [1.0, 1.0],
}


def test_misleading_failure_0_means_a_followed_misleading_tip_never_fails_an_attempt(
        template: str, database_url: str) -> None:
    """Every tip misleading and always followed, every rule passing without help but one failing for
    everyone: at 0 the three possible rules pass at once and only the impossible one fails (twice); at 1
    (the default) every attempt fails."""
    spared = run({**ALL_MISLEADING, "misleading_failure": 0.0}, 1, template, database_url)["truth"]
    assert (spared["attempts"], spared["attempts_passed"], spared["health_failures"]) == (5, 3, 0)
    assert (spared["misleading_followed_attempts"], spared["misleading_spared_attempts"]) == (5, 5)
    sunk = run(ALL_MISLEADING, 1, template, database_url)["truth"]
    assert (sunk["attempts"], sunk["attempts_passed"]) == (8, 0)
    assert "misleading_spared_attempts" not in sunk


def test_the_nuisance_keys_at_their_defaults_leave_the_default_worlds_json_unchanged(
        template: str, database_url: str) -> None:
    """The determinism contract: no draw is taken for the keys at their defaults, so the default world gives
    the same bytes with them left out or spelled out (and the same as before they existed: the world's
    JSON holds neither). Two runs of ten rules, every other key the default, to keep the test short."""
    short = {"runs": 2, "rules": 10}
    spelled = {**short, "misleading_failure": 1.0,
               "general_tips": {"count": 0, "per_attempt": 0, "tip_kinds": simulate.DEFAULTS["tip_kinds"]}}
    plain = simulate.metrics_json(run(short, 1, template, database_url))
    assert simulate.metrics_json(run(spelled, 1, template, database_url)) == plain
    metrics = json.loads(plain)
    assert "misleading_failure" not in metrics["world"] and "general_tips" not in metrics["world"]
    assert "general_tips" not in metrics["truth"]
    # The history depends on the draws alone, not on the schema: what the simulator drew for this world
    # and seed before the keys existed. An extra draw for either key at its default would move it.
    truth = metrics["truth"]
    assert (truth["attempts"], truth["attempts_passed"], truth["health_failures"], truth["retrievals"],
            truth["followed_share"]) == (47, 16, 5, 235, 0.480851)
