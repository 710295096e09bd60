"""``ctxgraph simulate``: a seeded world with known truth, written through the public write path.

A world (JSON, documented in docs/simulator.md) has rules, tips per rule with a true kind (helpful,
misleading, irrelevant), optionally general tips of no rule shown beside every rule's, a Worker whose
obedience changes from run to run, and a judge (or only an embedding) that reports whether each
retrieved tip was followed. The simulator creates a throwaway
database, deploys ctxgraph into it with sqitch, writes the whole history run by run as the agent and
the scoring pass would (``log_retrievals``, ``save_attempt``, ``update_retrieval_attempt_ids``,
``record_outcome``, then the three DEF-27 columns; the attribution fit after the last run), and
measures what ctxgraph concludes against the truth: Spearman rank correlation of each utility column
with the tips' true value, eviction precision and recall, helpful tips evicted, and each detector
view's precision and recall.

Deterministic: one ``random.Random(seed)`` drives every draw, and every timestamp is derived from the
run and attempt indices, so the same world and seed give the same metrics (``--json``) byte for byte.
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ctxgraph import jsontext
from ctxgraph.client import Client
from ctxgraph.connection_store import DatabaseError, connect, require_skill
from ctxgraph.fit import ensure_fit
from ctxgraph.simulate_store import SimulatorStore

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_WORLD_PATH = ROOT / "samples" / "worlds" / "default.json"

BASE_TIME = datetime(2026, 1, 5, 0, 0, tzinfo=timezone.utc)
ATTEMPT_STEP = timedelta(minutes=10)  # one attempt's slot: retrieval, then the attempt 5 s later, 2 min long
RUN_GAP = timedelta(days=1)

KINDS = ("helpful", "misleading", "irrelevant")

# Every key a world file may hold, with its default (the default world, samples/worlds/default.json).
DEFAULTS: dict[str, Any] = {
    "name": "default",
    "description": "",
    "skill": "stig",
    "runs": 6,
    "rules": 40,
    "tips_per_rule": 6,
    "tip_kinds": {"helpful": 0.4, "misleading": 0.2, "irrelevant": 0.4},
    "helpful_strength": [0.1, 0.4],
    "true_value": {"misleading": -1.0, "irrelevant": 0.0},
    "tips_per_attempt": 5,
    "retrieval_noise": 0.05,
    "max_attempts": 5,
    "base_pass_rate": [0.3, 0.9],
    "impossible_rules": 0.1,
    "obedience": {"start": 0.3, "end": 0.7},
    "harm_probability": 0.3,
    "judge_accuracy": 0.9,
    "embedding_only": False,
    "embedding": {"separation": 0.4, "sd": 0.15, "center": 0.6},
    "parameters": {},
}
# Keys samples/worlds/default.json leaves out, with their defaults: at these values they change nothing
# (no draw is taken for them), so a world that leaves them out writes the history it wrote before they
# existed, and its --json (whose "world" holds them only when they change something) is the same, byte
# for byte. They make worlds where the blame model's fixed assumptions are wrong (docs/simulator.md).
EXTRA_DEFAULTS: dict[str, Any] = {
    "misleading_failure": 1.0,
    "general_tips": {"count": 0, "per_attempt": 0},
}
KNOWN_KEYS = sorted({**DEFAULTS, **EXTRA_DEFAULTS})
# Nested objects whose keys merge over the defaults (the others replace the default whole).
_MERGED = {"true_value": {"misleading", "irrelevant"}, "embedding": {"separation", "sd", "center"},
           "general_tips": {"count", "per_attempt", "tip_kinds"}}


class WorldError(ValueError):
    """The world file is unreadable or invalid; the message names the key and what is wrong."""


class WorldTooLarge(WorldError):
    """The world could write more retrievals than the limit allows; the message gives both."""


@dataclass(frozen=True)
class World:
    name: str
    description: str
    skill: str
    runs: int
    rules: int
    tips_per_rule: int
    tip_kinds: dict[str, float]
    helpful_strength: tuple[float, float]
    true_value: dict[str, float]
    tips_per_attempt: int
    retrieval_noise: float
    max_attempts: int
    base_pass_rate: tuple[float, float]
    impossible_rules: float
    obedience: tuple[float, ...]  # one value per run
    harm_probability: float
    judge_accuracy: float
    embedding_only: bool
    embedding: dict[str, float]
    parameters: dict[str, float]
    misleading_failure: float  # the chance that a followed misleading tip fails the attempt
    general_tips: int  # tips of no rule, shown beside every rule's own
    general_per_attempt: int  # general tips retrieved per attempt, after the rule's
    general_kinds: dict[str, float]  # their kinds' shares (the world's tip_kinds unless given)
    source: dict[str, Any] = field(compare=False, repr=False)  # the merged world as given (for --json)


# The most retrievals a world may write unless the caller raises the limit (ctxgraph simulate
# --max-retrievals N) or lifts it (--no-size-limit). The history goes through the write path one
# attempt at a time, about 2.5 ms a retrieval on the default world (docs/simulator.md), so a world
# at the limit runs for hours; the largest world validate_world accepts could write 2.5e9, about ten
# weeks of it.
MAX_RETRIEVALS = 10_000_000


def most_retrievals(world: World) -> int:
    """The most retrievals the world can write: every rule attempted max_attempts times in every run,
    tips_per_attempt rule tips and general_tips.per_attempt general tips retrieved each time (a rule
    that passes stops earlier, so the history is smaller)."""
    per_attempt = world.tips_per_attempt + world.general_per_attempt
    return world.runs * world.rules * world.max_attempts * per_attempt


def check_size(world: World, limit: int | None = MAX_RETRIEVALS) -> None:
    """Raise WorldTooLarge when :func:`most_retrievals` exceeds ``limit`` (None: no limit)."""
    most = most_retrievals(world)
    if limit is not None and most > limit:
        tips = str(world.tips_per_attempt)
        if world.general_per_attempt:
            tips = (f"{world.tips_per_attempt + world.general_per_attempt} "
                    f"({world.tips_per_attempt} + {world.general_per_attempt} general)")
        raise WorldTooLarge(
            f"the world can write up to {most:,} retrievals ({world.runs} runs x {world.rules} rules x "
            f"{world.max_attempts} attempts x {tips} tips), past the limit of {limit:,}: "
            "raise it with --max-retrievals N or lift it with --no-size-limit")


# -- the world file ------------------------------------------------------------------------------------

def load_world(path: Path | str | None = None) -> World:
    """Read and validate a world file (default: samples/worlds/default.json)."""
    path = Path(path) if path is not None else DEFAULT_WORLD_PATH
    try:
        data = jsontext.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise WorldError(f"cannot read the world file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise WorldError(f"{path} is not UTF-8 text: {exc.reason} at byte {exc.start}") from exc
    except json.JSONDecodeError as exc:
        raise WorldError(f"{path} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    except ValueError as exc:
        raise WorldError(f"{path} is not JSON: {exc}") from exc
    return validate_world(data)


def validate_world(data: Any) -> World:
    """Merge a world over the defaults and check every key; raise WorldError naming the first problem."""
    if not isinstance(data, dict):
        raise WorldError("a world file holds one JSON object")
    merged = copy.deepcopy({**DEFAULTS, **EXTRA_DEFAULTS})
    for key, value in data.items():
        if key not in merged:
            raise WorldError(f"unknown key {key!r} (known keys: {', '.join(KNOWN_KEYS)})")
        if key in _MERGED:
            if not isinstance(value, dict):
                raise WorldError(f"{key} must be an object with keys {', '.join(sorted(_MERGED[key]))}")
            for sub in value:
                if sub not in _MERGED[key]:
                    raise WorldError(f"unknown key {key}.{sub} (known: {', '.join(sorted(_MERGED[key]))})")
            merged[key].update(value)
        else:
            merged[key] = copy.deepcopy(value)
    w = merged

    name = _string(w, "name")
    description = _string(w, "description")
    skill = _string(w, "skill")
    if not skill:
        raise WorldError("skill must not be empty")
    runs = _integer(w, "runs", 1, 100)
    rules = _integer(w, "rules", 1, 5000)
    tips_per_rule = _integer(w, "tips_per_rule", 1, 100)
    tips_per_attempt = _integer(w, "tips_per_attempt", 1, 100)
    if tips_per_attempt > tips_per_rule:
        raise WorldError(f"tips_per_attempt ({tips_per_attempt}) exceeds tips_per_rule ({tips_per_rule})")
    max_attempts = _integer(w, "max_attempts", 1, 50)

    shares = _kinds(w["tip_kinds"], "")
    general = w["general_tips"]
    general_count = _integer(general, "count", 0, 1000, where="general_tips.")
    general_per_attempt = _integer(general, "per_attempt", 0, 100, where="general_tips.")
    if general_per_attempt > general_count:
        raise WorldError(f"general_tips.per_attempt ({general_per_attempt}) exceeds general_tips.count "
                         f"({general_count})")
    general_kinds = _kinds(general["tip_kinds"], "general_tips.") if "tip_kinds" in general else dict(shares)
    if not general_count:
        general_kinds = dict(shares)  # no general tip to share out: the same world as without the key

    strength = _interval(w, "helpful_strength", 0.0, 1.0)
    base = _interval(w, "base_pass_rate", 0.0, 1.0)
    true_value = {k: _number(w["true_value"], k, -10.0, 10.0, where="true_value.") for k in ("misleading",
                                                                                            "irrelevant")}
    embedding = {
        "separation": _number(w["embedding"], "separation", 0.0, 2.0, where="embedding."),
        "sd": _number(w["embedding"], "sd", 0.0, 2.0, where="embedding."),
        "center": _number(w["embedding"], "center", -1.0, 1.0, where="embedding."),
    }
    obedience = _obedience(w["obedience"], runs)
    embedding_only = w["embedding_only"]
    if not isinstance(embedding_only, bool):
        raise WorldError("embedding_only must be true or false")
    parameters = w["parameters"]
    if not isinstance(parameters, dict):
        raise WorldError("parameters must be an object of ctxgraph.parameters names and numbers")
    for pname, pvalue in parameters.items():
        if isinstance(pvalue, bool) or not isinstance(pvalue, int | float) or not _finite(pvalue):
            raise WorldError(f"parameters.{pname} must be a number, got {pvalue!r}")

    return World(
        name=name, description=description, skill=skill, runs=runs, rules=rules, tips_per_rule=tips_per_rule,
        tip_kinds=shares, helpful_strength=strength, true_value=true_value, tips_per_attempt=tips_per_attempt,
        retrieval_noise=_number(w, "retrieval_noise", 0.0, 1.0), max_attempts=max_attempts,
        base_pass_rate=base, impossible_rules=_number(w, "impossible_rules", 0.0, 1.0), obedience=obedience,
        harm_probability=_number(w, "harm_probability", 0.0, 1.0),
        judge_accuracy=_number(w, "judge_accuracy", 0.0, 1.0), embedding_only=embedding_only,
        embedding=embedding, parameters={k: float(v) for k, v in parameters.items()},
        misleading_failure=_number(w, "misleading_failure", 0.0, 1.0), general_tips=general_count,
        general_per_attempt=general_per_attempt, general_kinds=general_kinds, source=w,
    )


def _kinds(kinds: Any, where: str) -> dict[str, float]:
    """The shares of a tip_kinds object (``where`` prefixes its key in messages): every kind, summing to 1."""
    if not isinstance(kinds, dict):
        raise WorldError(f"{where}tip_kinds must be an object: {{\"helpful\": share, \"misleading\": share, "
                         "\"irrelevant\": share}")
    for kind in kinds:
        if kind not in KINDS:
            raise WorldError(f"unknown tip kind {kind!r} in {where}tip_kinds (known: {', '.join(KINDS)})")
    shares = {kind: _number(kinds, kind, 0.0, 1.0, where=f"{where}tip_kinds.", default=0.0) for kind in KINDS}
    total = sum(shares.values())
    if abs(total - 1.0) > 1e-6:
        raise WorldError(f"{where}tip_kinds shares must sum to 1, got {total:g} "
                         f"({', '.join(f'{k} {v:g}' for k, v in shares.items())})")
    return shares


def world_json(world: World) -> dict[str, Any]:
    """The merged world for --json: every key of DEFAULTS, and each of EXTRA_DEFAULTS only when it changes
    something (misleading_failure below 1, general tips), so that a world written before those keys
    existed, or one spelling them out at their defaults, gives the same bytes."""
    out = {k: world.source[k] for k in DEFAULTS}
    if world.misleading_failure != 1.0:
        out["misleading_failure"] = world.source["misleading_failure"]
    if world.general_tips:
        general = world.source["general_tips"]
        out["general_tips"] = {**general, "tip_kinds": general.get("tip_kinds", world.source["tip_kinds"])}
    return out


def _finite(value: int | float) -> bool:
    """A number a float holds: finite, and an integer no larger than a float can be."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _string(w: Mapping[str, Any], key: str) -> str:
    if not isinstance(w[key], str):
        raise WorldError(f"{key} must be a string, got {w[key]!r}")
    return w[key]


def _integer(w: Mapping[str, Any], key: str, low: int, high: int, *, where: str = "") -> int:
    value = w[key]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise WorldError(f"{where}{key} must be a whole number from {low} to {high}, got {value!r}")
    return value


def _number(w: Mapping[str, Any], key: str, low: float, high: float, *, where: str = "",
            default: float | None = None) -> float:
    value = w.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise WorldError(f"{where}{key} must be a number from {low:g} to {high:g}, got {value!r}")
    return float(value)


def _interval(w: Mapping[str, Any], key: str, low: float, high: float) -> tuple[float, float]:
    value = w[key]
    if not (isinstance(value, list) and len(value) == 2):
        raise WorldError(f"{key} must be [min, max], got {value!r}")
    pair = {"min": value[0], "max": value[1]}
    lo = _number(pair, "min", low, high, where=f"{key} ")
    hi = _number(pair, "max", low, high, where=f"{key} ")
    if lo > hi:
        raise WorldError(f"{key}: min {lo:g} exceeds max {hi:g}")
    return (lo, hi)


def _obedience(value: Any, runs: int) -> tuple[float, ...]:
    """A number (every run), a list (one per run) or {"start", "end"} (linear over the runs)."""
    if isinstance(value, dict):
        unknown = set(value) - {"start", "end"}
        if unknown:
            raise WorldError(f"unknown key obedience.{sorted(unknown)[0]} (known: end, start)")
        start = _number(value, "start", 0.0, 1.0, where="obedience.")
        end = _number(value, "end", 0.0, 1.0, where="obedience.")
        if runs == 1:
            return (start,)
        return tuple(start + (end - start) * r / (runs - 1) for r in range(runs))
    if isinstance(value, list):
        if len(value) != runs:
            raise WorldError(f"obedience lists one value per run: {runs} runs, {len(value)} values")
        return tuple(_number({"v": v}, "v", 0.0, 1.0, where=f"obedience[{i}] ") for i, v in enumerate(value))
    return (_number({"obedience": value}, "obedience", 0.0, 1.0),) * runs


# -- the truth -----------------------------------------------------------------------------------------

@dataclass
class SimRule:
    index: int
    rule_id: str
    base_pass_rate: float
    impossible: bool


@dataclass
class SimTip:
    index: int
    ref: str
    rule: int | None  # None: a general tip (rule_id NULL), shown beside every rule's own tips
    kind: str
    strength: float  # helpful tips only: the pass probability a follow adds
    true_value: float
    similarity: float
    tip_id: int = 0


def build_truth(world: World, rng: random.Random) -> tuple[list[SimRule], list[SimTip]]:
    """Rules and tips with their true kinds: exact counts by the shares (largest remainder), shuffled.

    The rules' tips come first, then the general tips (``rule`` None), drawn after every rule tip and
    only when the world has some, so a world without them draws exactly what it drew before they existed."""
    n_impossible = round(world.impossible_rules * world.rules)
    impossible = set(rng.sample(range(world.rules), n_impossible))
    rules = [SimRule(r, f"sim_rule_{r + 1:03d}",
                     0.0 if r in impossible else rng.uniform(*world.base_pass_rate),
                     r in impossible) for r in range(world.rules)]
    total = world.rules * world.tips_per_rule
    kinds = _allocate(total, world.tip_kinds)
    rng.shuffle(kinds)
    tips = []
    for i, kind in enumerate(kinds):
        rule, slot = divmod(i, world.tips_per_rule)
        strength = rng.uniform(*world.helpful_strength) if kind == "helpful" else 0.0
        value = strength if kind == "helpful" else world.true_value[kind]
        tips.append(SimTip(i, f"r{rule + 1:03d}-t{slot + 1}", rule, kind, strength, value,
                           similarity=rng.uniform(0.55, 0.95)))
    if world.general_tips:
        general = _allocate(world.general_tips, world.general_kinds)
        rng.shuffle(general)
        for j, kind in enumerate(general):
            strength = rng.uniform(*world.helpful_strength) if kind == "helpful" else 0.0
            value = strength if kind == "helpful" else world.true_value[kind]
            tips.append(SimTip(total + j, f"gen-t{j + 1}", None, kind, strength, value,
                               similarity=rng.uniform(0.55, 0.95)))
    return rules, tips


def _allocate(total: int, shares: Mapping[str, float]) -> list[str]:
    exact = {k: shares[k] * total for k in KINDS}
    counts = {k: math.floor(v) for k, v in exact.items()}
    by_remainder = sorted(KINDS, key=lambda k: (-(exact[k] - counts[k]), KINDS.index(k)))
    for k in by_remainder[: total - sum(counts.values())]:
        counts[k] += 1
    return [k for k in KINDS for _ in range(counts[k])]


# -- the run -------------------------------------------------------------------------------------------

class SimulationError(RuntimeError):
    """The throwaway database could not be created or deployed; the message says which step failed."""


@dataclass
class Result:
    metrics: dict[str, Any]
    database: str
    kept: bool
    text: str = ""


ProgressFn = Callable[[str], None]

_counter = 0


def _database_name() -> str:
    global _counter
    _counter += 1
    return f"ctxgraph_sim_{os.getpid()}" + (f"_{_counter}" if _counter > 1 else "")


def _admin_conninfo(dsn: str) -> str:
    """A conninfo for the server's maintenance database (postgres), from DATABASE_URL or libpq variables."""
    return make_conninfo(dsn, dbname="postgres")


def _sqitch_env(dsn: str, database: str) -> dict[str, str]:
    env = dict(os.environ)
    params = conninfo_to_dict(dsn) if dsn else {}
    for key, var in (("host", "PGHOST"), ("port", "PGPORT"), ("user", "PGUSER"), ("password", "PGPASSWORD"),
                     ("sslmode", "PGSSLMODE")):
        if params.get(key):
            env[var] = str(params[key])
    env["PGDATABASE"] = database
    env.pop("DATABASE_URL", None)
    env["PGOPTIONS"] = (env.get("PGOPTIONS", "") + " -c client_min_messages=warning").strip()
    return env


def deploy(dsn: str, database: str, deploy_to: str | None = None, project_root: Path = ROOT) -> None:
    """Run ``sqitch deploy`` (``--to deploy_to``) into ``database`` from the project root."""
    if not (project_root / "sqitch.plan").is_file():
        raise SimulationError(f"no sqitch.plan in {project_root}: simulate runs from a ctxgraph checkout")
    command = ["sqitch", "deploy", "--no-verify", "--quiet"]
    if deploy_to:
        command += ["--to", deploy_to]
    try:
        done = subprocess.run(command, cwd=project_root, env=_sqitch_env(dsn, database), capture_output=True,
                              text=True, check=False)
    except FileNotFoundError as exc:
        raise SimulationError("sqitch is not installed (make provision-system)") from exc
    if done.returncode != 0:
        lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        raise SimulationError(f"sqitch deploy{' --to ' + deploy_to if deploy_to else ''} failed: "
                              f"{lines[-1] if lines else 'exit ' + str(done.returncode)}")


def create_template(dsn: str | None = None, deploy_to: str | None = None, project_root: Path = ROOT) -> str:
    """Create and deploy a database for later simulations to clone (CREATE DATABASE ... TEMPLATE).

    Returns its name. Deploying takes most of a small world's time; the bench grid and the tests deploy once per
    target and clone. Drop it with :func:`drop_database`.
    """
    dsn = dsn if dsn is not None else os.environ.get("DATABASE_URL", "")
    name = _database_name() + "_template"
    with _admin(dsn) as admin:
        SimulatorStore.create_database(admin, name)
    try:
        deploy(dsn, name, deploy_to, project_root)
    except BaseException:
        drop_database(name, dsn)
        raise
    return name


def drop_database(name: str, dsn: str | None = None) -> None:
    dsn = dsn if dsn is not None else os.environ.get("DATABASE_URL", "")
    with _admin(dsn) as admin:
        SimulatorStore.drop_database(admin, name)


def _admin(dsn: str) -> psycopg.Connection:
    try:
        return psycopg.connect(_admin_conninfo(dsn), autocommit=True)
    except psycopg.OperationalError as exc:
        raise DatabaseError(f"cannot connect to the database server: {str(exc).strip()}") from exc


def simulate(world: World, seed: int, *, dsn: str | None = None, keep_database: bool = False,
             deploy_to: str | None = None, template: str | None = None,
             progress: ProgressFn | None = None, project_root: Path = ROOT,
             max_retrievals: int | None = MAX_RETRIEVALS) -> Result:
    """Create a throwaway database, write the world's history into it, measure, and drop it (unless kept).

    A world that could write more than ``max_retrievals`` retrievals (None: no limit) raises
    WorldTooLarge before anything is connected to, created or written."""
    check_size(world, max_retrievals)
    dsn = dsn if dsn is not None else os.environ.get("DATABASE_URL", "")
    say = progress or (lambda _line: None)
    database = _database_name()
    with _admin(dsn) as admin:
        if SimulatorStore.database_exists(admin, database):
            raise SimulationError(f"database {database} already exists (a kept simulation?): drop it first")
        SimulatorStore.create_database(admin, database, template)
    try:
        if template is None:
            say(f"deploying ctxgraph{' to ' + deploy_to if deploy_to else ''} into {database}")
            deploy(dsn, database, deploy_to, project_root)
        conn = connect(make_conninfo(dsn, dbname=database))
        try:
            metrics = _run(conn, world, seed, deploy_to, say)
        finally:
            conn.close()
    finally:
        if not keep_database:
            drop_database(database, dsn)
    return Result(metrics, database, keep_database, render(metrics))


def _run(conn: psycopg.Connection, world: World, seed: int, deploy_to: str | None,
         say: ProgressFn) -> dict[str, Any]:
    rng = random.Random(seed)
    client = Client(conn)
    db = SimulatorStore(conn)
    skill = world.skill
    require_skill(conn, skill)
    unknown = db.set_parameters(world.parameters)
    if unknown:
        raise WorldError(f"unknown parameter {unknown[0]!r}: not a row of ctxgraph.parameters in this schema")
    # The fit: ctxgraph.fit (numpy, written through write_tip_fit) on a schema that has it; the
    # PL/pgSQL refresh_tip_effects on a release before it (--deploy-to @v0.6.0 and earlier).
    has_numpy_fit = db.has_function("ctxgraph.write_tip_fit(text, timestamptz, numeric, jsonb, jsonb)")
    has_refresh = not has_numpy_fit and db.has_function("ctxgraph.refresh_tip_effects(text, timestamptz)")
    has_evict = db.has_function("ctxgraph.evict_tips(text, timestamptz, boolean)")

    rules, tips = build_truth(world, rng)
    rule_tips = [t for t in tips if t.rule is not None]
    general = [t for t in tips if t.rule is None]
    ids = db.insert_tips(skill, [rules[t.rule].rule_id for t in rule_tips if t.rule is not None],
                         [f"Simulated tip {t.ref}" for t in rule_tips], BASE_TIME - timedelta(days=1))
    if general:
        ids += db.insert_general_tips(skill, [f"Simulated general tip {t.ref}" for t in general],
                                    BASE_TIME - timedelta(days=1))
    for tip, tip_id in zip(rule_tips + general, ids, strict=True):
        tip.tip_id = tip_id
    conn.commit()
    by_rule: dict[int, list[SimTip]] = {}
    for tip in rule_tips:
        by_rule.setdefault(tip.rule, []).append(tip)

    run_span = ATTEMPT_STEP * (world.rules * world.max_attempts) + RUN_GAP
    totals = {"attempts": 0, "passed": 0, "retrievals": 0, "followed": 0, "health_failures": 0,
              "rules_passed": 0, "rule_runs": 0, "general_retrievals": 0, "general_followed": 0,
              "misleading_followed": 0, "misleading_spared": 0}
    end = BASE_TIME
    for run in range(world.runs):
        run_id = f"sim-run-{run + 1}"
        run_start = BASE_TIME + run_span * run
        obedience = world.obedience[run]
        order = list(range(world.rules))
        rng.shuffle(order)
        slot = 0
        signals: tuple[list[int], list[bool | None], list[float | None]] = ([], [], [])
        for r in order:
            rule = rules[r]
            totals["rule_runs"] += 1
            for number in range(1, world.max_attempts + 1):
                retrieved_at = run_start + ATTEMPT_STEP * slot
                slot += 1
                # The retriever: each tip's similarity plus noise, the top tips_per_attempt in rank order.
                noise = world.retrieval_noise
                noisy = [(round(min(1.0, max(0.0, t.similarity + rng.gauss(0.0, noise))), 6), t)
                         for t in by_rule[r]]
                noisy.sort(key=lambda pair: (-pair[0], pair[1].index))
                shown = [t for _, t in noisy[: world.tips_per_attempt]]
                scores = [score for score, _ in noisy[: world.tips_per_attempt]]
                # Then the general tips: the same noise, the top general_tips.per_attempt after the
                # rule's tips (ranks k+1 ...). No draw at all in a world without them.
                if world.general_per_attempt:
                    noisy = [(round(min(1.0, max(0.0, t.similarity + rng.gauss(0.0, noise))), 6), t)
                             for t in general]
                    noisy.sort(key=lambda pair: (-pair[0], pair[1].index))
                    shown += [t for _, t in noisy[: world.general_per_attempt]]
                    scores += [score for score, _ in noisy[: world.general_per_attempt]]
                followed = [rng.random() < obedience for _ in shown]
                passed, failure, misled = _outcome(world, rule, shown, followed, rng)
                retrieval_ids = client.log_retrievals(skill, run_id, rule.rule_id, [t.tip_id for t in shown],
                                                      scores, retrieved_at)
                started = retrieved_at + timedelta(seconds=5)
                ended = started + timedelta(minutes=2)
                attempt_id = client.save_attempt(skill, run_id, rule.rule_id, number, None, started, ended)
                client.update_retrieval_attempt_ids(skill, retrieval_ids, attempt_id)
                client.record_outcome(skill, attempt_id, passed, failure, ended)
                for rid, f in zip(retrieval_ids, followed, strict=True):
                    llm, emb = _signals(world, f, rng)
                    signals[0].append(rid)
                    signals[1].append(llm)
                    signals[2].append(emb)
                totals["attempts"] += 1
                totals["retrievals"] += len(shown)
                totals["followed"] += sum(followed)
                totals["general_retrievals"] += sum(t.rule is None for t in shown)
                pairs = list(zip(shown, followed, strict=True))
                totals["general_followed"] += sum(f for t, f in pairs if t.rule is None)
                if any(f and t.kind == "misleading" for t, f in pairs):
                    totals["misleading_followed"] += 1
                    totals["misleading_spared"] += not misled
                totals["health_failures"] += failure == "health_failure"
                if passed:
                    totals["passed"] += 1
                    totals["rules_passed"] += 1
                    break
        conn.commit()
        # The end-of-run scoring pass: the DEF-27 columns in one batch. The effects are refitted
        # after the last run only: the simulated retriever never reads them, so a refit after an
        # earlier run would be replaced without moving a figure (about 3 s a run).
        scored_at = run_start + ATTEMPT_STEP * slot + timedelta(minutes=30)
        db.write_follow_signals(skill, *signals, scored_at)
        if run == world.runs - 1:
            if has_refresh:
                db.refresh_tip_effects_released(skill, scored_at)
            conn.commit()
            if has_numpy_fit:
                ensure_fit(conn, skill, scored_at, full=True)
        conn.commit()
        end = scored_at
        say(f"run {run + 1}/{world.runs}: obedience {obedience:.2f}, {slot} attempts")

    metrics = measure(conn, world, tips, end, has_evict)
    conn.rollback()
    kinds = {k: sum(t.kind == k for t in tips) for k in KINDS}
    truth_extra: dict[str, Any] = {}
    if world.misleading_failure != 1.0:
        truth_extra["misleading_followed_attempts"] = totals["misleading_followed"]
        truth_extra["misleading_spared_attempts"] = totals["misleading_spared"]
    if general:
        truth_extra["general_tips"] = {
            "tips": len(general),
            "tips_by_kind": {k: sum(t.kind == k for t in general) for k in KINDS},
            "per_attempt": world.general_per_attempt,
            "retrievals": totals["general_retrievals"],
            "followed_share": _ratio(totals["general_followed"], totals["general_retrievals"]),
        }
    return {
        "world": world_json(world),
        "seed": seed,
        "deployed": {"to": deploy_to or "HEAD", "last_change": db.last_change()},
        "truth": {
            "rules": world.rules,
            "rules_failing_for_everyone": sum(r.impossible for r in rules),
            "tips": len(tips),
            "tips_by_kind": kinds,
            "runs": world.runs,
            "obedience": [round(o, 6) for o in world.obedience],
            "attempts": totals["attempts"],
            "attempts_passed": totals["passed"],
            "health_failures": totals["health_failures"],
            "rule_runs_passed_share": _ratio(totals["rules_passed"], totals["rule_runs"]),
            "retrievals": totals["retrievals"],
            "followed_share": _ratio(totals["followed"], totals["retrievals"]),
            **truth_extra,
        },
        **metrics,
    }


def _outcome(world: World, rule: SimRule, shown: Sequence[SimTip], followed: Sequence[bool],
             rng: random.Random) -> tuple[bool, str | None, bool]:
    """Each followed misleading tip, in the order shown, fails the attempt with misleading_failure (a
    health failure with harm_probability); if none does, the rule's base pass rate plus the strengths of
    the followed helpful tips (a rule failing for everyone stays at 0). The third value says whether a
    misleading tip failed it.

    A misleading_failure of exactly 1 (the default) or 0 takes no draw, so a world at the default draws
    what it drew before the key existed; the draws stop at the first tip that fails the attempt."""
    p_fail = world.misleading_failure
    for t, f in zip(shown, followed, strict=True):
        if f and t.kind == "misleading" and (p_fail >= 1.0 or (p_fail > 0.0 and rng.random() < p_fail)):
            return False, "health_failure" if rng.random() < world.harm_probability else "clean_failure", True
    if rule.impossible:
        p = 0.0
    else:
        p = rule.base_pass_rate + sum(t.strength for t, f in zip(shown, followed, strict=True)
                                      if f and t.kind == "helpful")
    if rng.random() < min(1.0, p):
        return True, None, False
    return False, "clean_failure", False


def _signals(world: World, followed: bool, rng: random.Random) -> tuple[bool | None, float]:
    """What the scoring pass would write: the judge's verdict (None in embedding-only mode) and a cosine."""
    llm: bool | None = None
    if not world.embedding_only:
        llm = followed if rng.random() < world.judge_accuracy else not followed
    e = world.embedding
    mean = e["center"] + (e["separation"] / 2 if followed else -e["separation"] / 2)
    emb = min(1.0, max(-1.0, rng.gauss(mean, e["sd"]) if e["sd"] > 0 else mean))
    return llm, round(emb, 6)


# -- measuring against the truth ----------------------------------------------------------------------

# The utility columns ranked against the true value: outcome-only credit, the ADR's follow-weighted
# rate, the per-tip effect and 1 - misleading_probability.
UTILITY_COLUMNS = ("outcome_hit_rate", "hit_rate", "effect", "not_misleading")


def measure(conn: psycopg.Connection, world: World, tips: Sequence[SimTip], as_of: datetime,
            has_evict: bool) -> dict[str, Any]:
    db = SimulatorStore(conn)
    client = Client(conn)
    skill = world.skill
    by_id = {t.tip_id: t for t in tips}
    misleading = {t.tip_id for t in tips if t.kind == "misleading"}
    helpful = {t.tip_id for t in tips if t.kind == "helpful"}

    effect_column = db.has_column(skill, "tip_hit_rates", "effect")
    rows = db.tip_utilities(skill, effect_column)
    scored = [r for r in rows if r["scored"] and r["tip_id"] in by_id]
    columns: dict[str, dict[int, float | None]] = {
        "outcome_hit_rate": {r["tip_id"]: r["outcome_hit_rate"] for r in scored},
        "hit_rate": {r["tip_id"]: r["hit_rate"] for r in scored},
    }
    effect_source = None
    if effect_column:
        columns["effect"] = {r["tip_id"]: r["effect"] for r in scored}
        effect_source = f"{skill}.tip_hit_rates.effect"
    elif db.has_relation("ctxgraph.tip_effects"):
        effects = {r["tip_id"]: r["effect"] for r in db.tip_effects(skill)}
        columns["effect"] = {r["tip_id"]: effects.get(r["tip_id"]) for r in scored}
        effect_source = "ctxgraph.tip_effects.effect"
    # The utility eviction acts on: the chance that following the tip does not fail the attempt.
    if db.has_column("ctxgraph", "tip_effects", "misleading_probability"):
        blame = {r["tip_id"]: r["misleading_probability"] for r in db.tip_effects(skill, with_blame=True)}
        columns["not_misleading"] = {r["tip_id"]: None if blame.get(r["tip_id"]) is None else 1 - blame[r["tip_id"]]
                                     for r in scored}
    spearman_rows = {}
    for name in UTILITY_COLUMNS:
        if name not in columns:
            spearman_rows[name] = {"spearman": None, "tips": 0, "available": False}
            continue
        pairs = [(v, by_id[tid].true_value) for tid, v in columns[name].items() if v is not None]
        spearman_rows[name] = {"spearman": _round(spearman([p[0] for p in pairs], [p[1] for p in pairs])),
                               "tips": len(pairs), "available": True}
    if effect_source:
        spearman_rows["effect"]["source"] = effect_source
    if spearman_rows["not_misleading"]["available"]:
        spearman_rows["not_misleading"]["source"] = "1 - ctxgraph.tip_effects.misleading_probability"

    eviction: dict[str, Any] = {"available": has_evict}
    if has_evict:
        proposed = client.evict_tips(skill, as_of, dry_run=True)
        eviction.update(_detector({r["tip_id"] for r in proposed}, misleading))
        evicted_helpful = sum(r["tip_id"] in helpful for r in proposed)
        eviction["helpful_evicted"] = evicted_helpful
        eviction["helpful_evicted_share"] = _ratio(evicted_helpful, len(helpful))
        reasons: dict[str, int] = {}
        for r in proposed:
            # The reason's text carries the evidence's figures; its kind is the part before the colon.
            kind = str(r["reason"]).split(":", 1)[0].strip()
            reasons[kind] = reasons.get(kind, 0) + 1
        eviction["by_reason"] = dict(sorted(reasons.items()))
        eviction["by_kind"] = {k: sum(by_id[r["tip_id"]].kind == k for r in proposed if r["tip_id"] in by_id)
                               for k in KINDS}

    detectors: dict[str, Any] = {}
    for view, read in (("misleading_tips", client.misleading_tips),
                       ("harmful_when_followed", client.harmful_when_followed)):
        if db.has_relation(f"{skill}.{view}"):
            listed = {r["tip_id"] for r in read(skill)}
            detectors[view] = {"available": True, **_detector(listed, misleading)}
        else:
            detectors[view] = {"available": False}

    per_tip = []
    for t in tips:
        per_tip.append({"ref": t.ref, "kind": t.kind, "true_value": _round(t.true_value),
                        **{name: _round(columns[name].get(t.tip_id)) if name in columns else None
                           for name in UTILITY_COLUMNS}})
    return {"spearman": spearman_rows, "eviction": eviction, "detectors": detectors, "per_tip": per_tip}


def _detector(listed: set[int], positives: set[int]) -> dict[str, Any]:
    hits = len(listed & positives)
    return {"listed": len(listed), "true_positives": hits, "precision": _ratio(hits, len(listed)),
            "recall": _ratio(hits, len(positives))}


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 6) if b else None


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


def average_ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks; tied values share the average of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rank correlation (Pearson on average ranks); None with fewer than 2 points or no spread."""
    if len(xs) != len(ys):
        raise ValueError("spearman needs two sequences of one length")
    if len(xs) < 2:
        return None
    rx, ry = average_ranks(xs), average_ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


# -- output --------------------------------------------------------------------------------------------

def _fmt(x: Any, digits: int = 2) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def _percent(x: float | None) -> float | None:
    return None if x is None else x * 100


def render(m: Mapping[str, Any]) -> str:
    """The one compact table of ``ctxgraph simulate``."""
    truth, world = m["truth"], m["world"]
    k = truth["tips_by_kind"]
    obedience = truth["obedience"]
    mode = (f"embedding only (separation {world['embedding']['separation']:g})" if world["embedding_only"]
            else f"judge accuracy {world['judge_accuracy']:g}")
    if "misleading_failure" in world:
        mode += (f", a followed misleading tip fails {world['misleading_failure']:g} of the time "
                 f"({truth['misleading_spared_attempts']} of {truth['misleading_followed_attempts']} "
                 "attempts spared)")
    general = truth.get("general_tips")
    general_kinds = ""
    per_attempt = f"{world['tips_per_attempt']} retrieved per attempt"
    if general:
        g = general["tips_by_kind"]
        general_kinds = (f", {general['tips']} of them general ({g['helpful']} helpful, {g['misleading']} "
                         f"misleading, {g['irrelevant']} irrelevant)")
        per_attempt += f" + {general['per_attempt']} general"
    lines = [
        f"world {world['name']!r}, seed {m['seed']}, deployed to {m['deployed']['to']} "
        f"(last change {m['deployed']['last_change']})",
        f"truth: {truth['rules']} rules ({truth['rules_failing_for_everyone']} fail for everyone), "
        f"{truth['tips']} tips ({k['helpful']} helpful, {k['misleading']} misleading, "
        f"{k['irrelevant']} irrelevant){general_kinds}, {per_attempt}",
        f"history: {truth['runs']} runs, obedience {obedience[0]:.2f}->{obedience[-1]:.2f}, {mode}; "
        f"{truth['attempts']} attempts ({truth['attempts_passed']} passed, {truth['health_failures']} health "
        f"failures), {truth['retrievals']} retrievals, {_fmt(truth['followed_share'])} followed",
        "",
        f"{'measure':<40} {'value':>8}  detail",
    ]
    for name, row in m["spearman"].items():
        detail = f"{row['tips']} tips" + (f", {row['source']}" if row.get("source") else "")
        lines.append(f"{'spearman ' + name + ' vs true value':<40} {_fmt(row['spearman']):>8}  "
                     f"{detail if row['available'] else 'not in this schema'}")
    ev = m["eviction"]
    if ev["available"]:
        lines.append(f"{'eviction precision':<40} {_fmt(ev['precision']):>8}  "
                     f"{ev['true_positives']} of {ev['listed']} proposed are misleading")
        lines.append(f"{'eviction recall':<40} {_fmt(ev['recall']):>8}  of {k['misleading']} misleading tips")
        lines.append(f"{'helpful tips evicted':<40} {ev['helpful_evicted']:>8}  "
                     f"{_fmt(_percent(ev['helpful_evicted_share']), 1)}"
                     f"% of {k['helpful']} helpful; reasons "
                     + (", ".join(f"{r} {n}" for r, n in ev["by_reason"].items()) or "none"))
    else:
        lines.append(f"{'eviction':<40} {'n/a':>8}  evict_tips not in this schema")
    for view, d in m["detectors"].items():
        if d["available"]:
            lines.append(f"{view + ' precision':<40} {_fmt(d['precision']):>8}  "
                         f"{d['true_positives']} of {d['listed']} listed are misleading")
            lines.append(f"{view + ' recall':<40} {_fmt(d['recall']):>8}")
        else:
            lines.append(f"{view:<40} {'n/a':>8}  not in this schema")
    return "\n".join(lines) + "\n"


def metrics_json(m: Mapping[str, Any]) -> str:
    return json.dumps(m, indent=2, sort_keys=True) + "\n"
