"""The ``ctxgraph`` command: ``score`` (the end-of-run scoring pass), ``load``, ``fit``, ``evict``, ``audit``,
``evaluate``, ``calibrate``, ``simulate``, and ``db`` (deploy, verify, revert or report the schema with
sqitch).

Exit status: 0 when the command completed (a pass with per-row NULLs has completed), 2 for usage
errors (bad arguments, unreadable run log, unknown skill, a run log the write path refuses; for
``score`` an unknown run or rescore reason and a log of another run), 3 when the database cannot be
reached or fails during the command (a server restart mid-pass included). Every error ends with one line on stderr,
``ctxgraph <command>: <what went wrong>``, never a traceback; an unknown skill reads the same for
every command. ``ctxgraph db`` returns sqitch's own exit status (2 when sqitch cannot be run at all).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_DATABASE = 3


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    if value > 2**31 - 1:
        raise argparse.ArgumentTypeError(f"must be at most {2**31 - 1} (the database's integer), got {value}")
    return value


def _retrievals(text: str) -> int:
    """A count of retrievals (1 or more; no database column bounds it): 50000000, 50_000_000 or 5e7."""
    try:
        value = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        if not number.is_integer():
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        value = int(number)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {text}")
    return value


def _judge_url(text: str) -> str:
    import httpx

    if not text:  # CTXGRAPH_JUDGE_URL set empty: no judge
        return text
    try:
        url = httpx.URL(text)
        port = url.port
    except (httpx.InvalidURL, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"not a URL: {exc}") from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise argparse.ArgumentTypeError(f"must be an http(s) base URL such as http://127.0.0.1:8000/v1, got {text!r}")
    if port is not None and not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 1 and 65535, got {port}")
    return text


def _reasons(text: str) -> tuple[str, ...]:
    reasons = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not reasons:
        raise argparse.ArgumentTypeError("name at least one status, e.g. no_script or no_script,unparseable")
    return reasons


def _share(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _instant(text: str):
    """An ISO 8601 instant with its time zone, e.g. 2026-12-01T00:00:00Z."""
    from datetime import datetime

    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 instant: {text!r}") from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(f"give the time zone too (e.g. {text}Z or {text}+00:00)")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def _top_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    parser = argparse.ArgumentParser(
        prog="ctxgraph",
        description="Outcome attribution for agent memory. The database comes from DATABASE_URL "
        "(else the libpq variables PGHOST, PGPORT, PGUSER, PGDATABASE).",
    )
    return parser, parser.add_subparsers(dest="command", required=True, metavar="COMMAND")


def _add_db_parser(sub: argparse._SubParsersAction) -> None:
    db = sub.add_parser(
        "db",
        help="deploy, verify, revert or report the ctxgraph schema with sqitch",
        description="Run sqitch on the sqitch project installed with ctxgraph (its plan and its deploy, "
        "revert and verify scripts) against the database of DATABASE_URL (a postgresql:// URL), else of the "
        "libpq variables. sqitch must be on PATH; its output is printed as it comes and its exit status is "
        "the command's.",
    )
    verbs = db.add_subparsers(dest="db_verb", required=True, metavar="VERB")
    deploy = verbs.add_parser("deploy",
                              help="deploy the changes not deployed yet, verifying each (sqitch deploy)")
    deploy.add_argument("--to", metavar="CHANGE", help="deploy only up to this change or tag, e.g. @v0.4.0")
    verbs.add_parser("verify", help="run the verify script of every deployed change (sqitch verify)")
    revert = verbs.add_parser("revert", help="revert changes without asking (sqitch revert -y)",
                              description="Revert the changes after --to, or with --all every change "
                              "(the schemas and their data go). sqitch is told not to ask: how far is never "
                              "a default.")
    how_far = revert.add_mutually_exclusive_group(required=True)
    how_far.add_argument("--to", metavar="CHANGE",
                         help="keep this change or tag and those before it, e.g. @v0.1.0 or "
                              "def27_tip_followed^")
    how_far.add_argument("--all", action="store_true", dest="revert_all",
                         help="revert every change (sqitch's --to @ROOT would keep the first)")
    verbs.add_parser("status", help="the last change deployed and any not deployed yet (sqitch status)")


def _db_parser() -> argparse.ArgumentParser:
    """The parser of `ctxgraph db` alone: none of the other commands' modules is imported to build it."""
    parser, sub = _top_parser()
    _add_db_parser(sub)
    return parser


def build_parser() -> argparse.ArgumentParser:
    # Here, not at the top: they bring numpy, which `ctxgraph db` must not need (see main).
    from ctxgraph.follow_signal.calibration import CASCADE_CHECK_SHARE, MIN_PER_CLASS
    from ctxgraph.embed import DEFAULT_MAX_CHUNKS

    parser, sub = _top_parser()

    score = sub.add_parser(
        "score",
        help="score a run's retrievals (DEF-27: judge and embedding legs)",
        description="Fill tip_followed_llm / tip_followed_emb / tip_followed_computed_at for every unscored "
        "retrieval of one run, reading the real fix scripts from the run log (JSONL).",
    )
    score.add_argument("--skill", required=True, help="skill schema, e.g. stig")
    score.add_argument("--run", required=True, dest="run_id", help="run id, e.g. run-7")
    score.add_argument("--log", required=True, type=Path, help="the run's JSONL log")
    score.add_argument(
        "--judge-url",
        type=_judge_url,
        default=os.environ.get("CTXGRAPH_JUDGE_URL"),
        help="OpenAI-compatible base URL of the judge, e.g. http://127.0.0.1:8000/v1 (default: CTXGRAPH_JUDGE_URL)",
    )
    score.add_argument(
        "--judge-model",
        default=os.environ.get("CTXGRAPH_JUDGE_MODEL"),
        help="judge model name (default: CTXGRAPH_JUDGE_MODEL, else the server's first listed model)",
    )
    score.add_argument("--concurrency", type=_positive_int, default=8, help="judge requests in flight (default 8)")
    score.add_argument("--judge-timeout", type=_positive_float, default=60.0, help="seconds one judge request may take in all: connecting, sending, the whole answer")
    score.add_argument("--batch-size", type=_positive_int, default=256,
                       help="retrievals leased per claim (written back in groups of 64)")
    score.add_argument("--no-judge", action="store_true", help="skip the LLM judge leg")
    score.add_argument("--no-embed", action="store_true", help="skip the embedding leg")
    score.add_argument("--max-chunks", type=_positive_int, default=DEFAULT_MAX_CHUNKS,
                       help=f"embedding leg: chunks per script at most (default {DEFAULT_MAX_CHUNKS}); a longer "
                            "script is scored on this many chunks spread evenly over it")
    score.add_argument("--no-signal", action="store_true", help="skip the lexical follow signal (follow_probability)")
    score.add_argument("--judge-policy", choices=("all", "uncertain"), default="all",
                       help="ask the judge for every retrieval (all, the default) or only where the calibrated "
                            "follow probability lies inside the calibration's cascade band (uncertain)")
    score.add_argument("--cascade-check", type=_share, default=CASCADE_CHECK_SHARE, metavar="SHARE",
                       help="with --judge-policy uncertain: the share of rows outside the band the judge is still "
                            f"asked about (default {CASCADE_CHECK_SHARE}), besides the skill's first rows; when "
                            "their verdicts, with those of the skill's earlier runs, show more disagreement than "
                            "the band allows, the judge is asked everywhere. 0: no check")
    score.add_argument("--rescore", type=_reasons, default=(), metavar="REASON[,REASON]",
                       help="also score again the run's stamped rows whose judge or embedding status is one of "
                            "these (the statuses in ctxgraph.scoring_statuses, e.g. no_script,unparseable); "
                            "a row is rewritten only when its new result is final")
    score.add_argument("--quiet", action="store_true", help="no progress lines")

    load = sub.add_parser(
        "load",
        help="load tips and run logs through the write path, as an agent would",
        description="Insert tips (tips.jsonl: tip_ref, rule_id, body), then write each run log in one "
        "transaction: staged with COPY and written by ctxgraph.ingest_run_log, or with --per-call through "
        "log_retrievals, save_attempt, update_retrieval_attempt_ids and record_outcome line by line.",
    )
    load.add_argument("--skill", required=True)
    load.add_argument("--tips", required=True, type=Path, help="tips.jsonl")
    load.add_argument("--log", required=True, type=Path, action="append", help="a run log (repeatable)")
    load.add_argument("--per-call", action="store_true",
                      help="replay each line through the four per-call write functions, one round trip each, "
                           "instead of one COPY and ctxgraph.ingest_run_log (same rows, much slower)")

    fit = sub.add_parser(
        "fit",
        help="refit a skill's per-tip effects and blame (ctxgraph.tip_effects) unless the stored fit is current",
        description="Read the skill's scored retrievals up to --as-of in one snapshot, fit the per-tip effects and "
        "the blame model (ctxgraph.fit) and replace the skill's rows of ctxgraph.tip_effects in one transaction. "
        "Nothing is fitted when ctxgraph.fit_state says the stored fit is already that of the evidence, unless --full. "
        "A refit is incremental where it can be: only the tips whose evidence changed since the stored fit (and the "
        "groups and blocks holding them) are refitted, from the stored figures; --full refits everything from nothing.",
    )
    fit.add_argument("--skill", required=True)
    fit.add_argument("--as-of", type=_instant, help="the instant whose evidence is fitted (default: now)")
    fit.add_argument("--full", action="store_true",
                     help="refit every tip from nothing (and profile blame.misleading_failure again), even when the "
                          "stored fit is current")
    fit.add_argument("--quiet", action="store_true", help="no progress lines")

    evict = sub.add_parser(
        "evict",
        help="refit when stale, then preview (or --apply) ctxgraph.evict_tips",
        description="Make the skill's fit current (as ctxgraph fit), then call ctxgraph.evict_tips: a preview of "
        "what it would retire and why, or with --apply the retirements themselves (logged in ctxgraph.tip_evictions; "
        "undo with ctxgraph.restore_tip).",
    )
    evict.add_argument("--skill", required=True)
    evict.add_argument("--as-of", type=_instant, help="the instant eviction decides as of (default: now)")
    evict.add_argument("--apply", action="store_true", help="retire the tips (default: a dry run)")
    evict.add_argument("--quiet", action="store_true", help="no progress lines")

    audit = sub.add_parser("audit", help="the audit reports, in the terminal or as one HTML page")
    audit.add_argument("--skill", required=True)
    audit.add_argument("--run", dest="run_id", help="limit the per-run sections to one run")
    audit.add_argument("--rule", dest="rule_id", help="also show the ranker's order for this rule, before and after")
    audit.add_argument("--top", type=_positive_int, default=10, help="rows in the top and bottom tables")
    audit.add_argument("--html", type=Path, help="also write a self-contained HTML page here")
    audit.add_argument("--only", help="comma-separated section keys to print (overview, null_reasons, ranking, top, "
                       "bottom, misleading, harmful_when_followed, harmful, eviction, agreement, anomalies)")

    evaluate = sub.add_parser("evaluate", help="judge and embedding legs against gold labels")
    evaluate.add_argument("--skill", required=True)
    evaluate.add_argument("--labels", required=True, type=Path, help="CSV of gold labels (see docs/cli.md)")
    evaluate.add_argument("--tips", type=Path, help="tips.jsonl, when the labels name tips by tip_ref")

    calibrate = sub.add_parser(
        "calibrate",
        help="fit the follow signal's calibration on the judge's verdicts or on gold labels",
        description="Fit the logistic combination of the lexical follow signal and the cosine that gives "
                    "follow_probability, on the skill's judge verdicts (default) or on gold labels, cross-validated "
                    "by rule, with the judge cascade's band; the next scoring pass uses it. Fewer than "
                    "--min-per-class followed or ignored examples, or a fit cross-validation cannot score, is "
                    "refused (exit 2) and nothing is stored.",
    )
    calibrate.add_argument("--skill", required=True)
    calibrate.add_argument("--labels", type=Path, help="CSV of gold labels (as for evaluate) instead of judge verdicts")
    calibrate.add_argument("--tips", type=Path, help="tips.jsonl, when the labels name tips by tip_ref")
    calibrate.add_argument("--max-disagreement", type=_positive_float, default=0.03,
                           help="cascade: most expected disagreement with the judge (default 0.03)")
    calibrate.add_argument("--folds", type=_positive_int, default=5, help="cross-validation folds by rule (default 5)")
    calibrate.add_argument("--from-scratch", action="store_true",
                           help="pull the coefficients toward zero, not toward the default calibration's")
    calibrate.add_argument("--min-per-class", type=_positive_int, default=MIN_PER_CLASS, metavar="N",
                           help=f"fewest followed and fewest ignored examples to fit on (default {MIN_PER_CLASS}); "
                                "with fewer, or with no cross-validated figure, nothing is fitted or stored (exit 2)")
    calibrate.add_argument("--dry-run", action="store_true", help="fit and print, store nothing")

    simulate = sub.add_parser(
        "simulate",
        help="a seeded world with known truth, written into a throwaway database and measured",
        description="Create a throwaway database (ctxgraph_sim_<pid>) on the server, deploy ctxgraph with "
        "sqitch, write a simulated history through the write path and print how well ctxgraph's utility "
        "columns, eviction and detector views recover the truth (docs/simulator.md).",
    )
    simulate.add_argument("--world", type=Path, help="world file (default: samples/worlds/default.json)")
    simulate.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    simulate.add_argument("--json", type=Path, dest="json_out", help="also write every figure as JSON here")
    simulate.add_argument("--keep-database", action="store_true", help="keep the throwaway database")
    simulate.add_argument("--deploy-to", metavar="CHANGE",
                          help="deploy only up to this sqitch change or tag (sqitch deploy --to), e.g. @v0.4.0")
    simulate.add_argument("--quiet", action="store_true", help="no progress lines")
    # Here, not at the top: the simulator brings psycopg, which a command imports only once parsed.
    from ctxgraph.simulate import MAX_RETRIEVALS

    size = simulate.add_mutually_exclusive_group()
    size.add_argument("--max-retrievals", type=_retrievals, metavar="N",
                      help="refuse (exit 2) a world that could write more than N retrievals, runs x rules x "
                           f"max_attempts x tips_per_attempt (default {MAX_RETRIEVALS:,})")
    size.add_argument("--no-size-limit", action="store_true", help="run a world of any size")
    _add_db_parser(sub)
    return parser


def _simulate(args: argparse.Namespace) -> int:
    from ctxgraph import simulate

    try:
        world = simulate.load_world(args.world)
    except simulate.WorldError as exc:
        print(f"ctxgraph simulate: {exc}", file=sys.stderr)
        return EXIT_USAGE

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    limit = None if args.no_size_limit else args.max_retrievals or simulate.MAX_RETRIEVALS
    try:
        result = simulate.simulate(world, args.seed, keep_database=args.keep_database, deploy_to=args.deploy_to,
                                   progress=progress, max_retrievals=limit)
    except simulate.WorldError as exc:
        print(f"ctxgraph simulate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except simulate.SimulationError as exc:
        print(f"ctxgraph simulate: {exc}", file=sys.stderr)
        return EXIT_DATABASE
    print(result.text, end="")
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(simulate.metrics_json(result.metrics), encoding="utf-8")
    if result.kept:
        print(f"database kept: {result.database}", file=sys.stderr)
    return EXIT_OK


def _score(args: argparse.Namespace) -> int:
    from ctxgraph import scoring_pass

    if not args.log.is_file():
        print(f"ctxgraph score: run log not found: {args.log}", file=sys.stderr)
        return EXIT_USAGE
    config = scoring_pass.PassConfig(
        skill=args.skill,
        run_id=args.run_id,
        log_path=args.log,
        judge_url=args.judge_url or None,
        judge_model=args.judge_model or None,
        concurrency=args.concurrency,
        judge_timeout=args.judge_timeout,
        use_judge=not args.no_judge,
        use_embed=not args.no_embed,
        use_signal=not args.no_signal,
        judge_policy=args.judge_policy,
        cascade_check_share=args.cascade_check,
        batch_size=args.batch_size,
        max_chunks=args.max_chunks,
        rescore=args.rescore,
    )
    conn = _connect()

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    try:
        summary = scoring_pass.run_pass(conn, config, progress)
    except OSError as exc:
        print(f"ctxgraph score: cannot read the run log: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except scoring_pass.PassRefused as exc:
        print(f"ctxgraph score: {exc}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        # A connection the server dropped (a restart mid-pass) is closed without a word: the error
        # that ended the pass is the one reported (exit 3).
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - closing a dead connection must not mask the real error
            pass
    print(summary.render())
    return EXIT_OK


def _connect():
    """Open the connection; DatabaseError (exit 3) when the database cannot be reached."""
    from ctxgraph.connection_store import connect

    return connect()


def _load(args: argparse.Namespace) -> int:
    import psycopg

    from ctxgraph import loader
    from ctxgraph.connection_store import require_skill

    for path in [args.tips, *args.log]:
        if not path.is_file():
            problem = "not a file" if path.exists() else "file not found"
            print(f"ctxgraph load: {problem}: {path}", file=sys.stderr)
            return EXIT_USAGE
    conn = _connect()
    with conn:
        require_skill(conn, args.skill)
        # The tips and each file are then transactions of their own, so a load a deadlock aborted
        # (40P01) can be run again from its first line without locks an earlier file still holds.
        conn.commit()
        try:
            tips = loader.load_tips(conn, args.skill, args.tips)
            print(f"tips: {len(tips)} from {args.tips}")
            for path in args.log:
                for run in loader.load_run(conn, args.skill, path, tips, bulk=not args.per_call):
                    print(f"run {run.run_id}: {run.attempts} attempts, {run.retrievals} retrievals from {path}")
        except (loader.LoadError, psycopg.Error) as exc:
            if isinstance(exc, psycopg.Error) and not loader.refused_by_write_path(exc):
                raise  # the database failed, not the file: exit 3 like every other command
            print(f"ctxgraph load: {_one_line(exc)} (nothing from that file was kept)", file=sys.stderr)
            return EXIT_USAGE
    return EXIT_OK


def _ensure_fit(conn, args: argparse.Namespace, command: str, *, full: bool = False):
    """The fit `fit` and `evict` start with (progress lines on stderr unless --quiet); None after
    reporting parameters out of range (exit 2)."""
    from ctxgraph import fit
    from ctxgraph.connection_store import require_skill

    require_skill(conn, args.skill)
    conn.commit()

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    try:
        return fit.ensure_fit(conn, args.skill, args.as_of, full=full, progress=progress)
    except ValueError as exc:  # parameters out of range
        print(f"ctxgraph {command}: {exc}", file=sys.stderr)
        return None


def _fit(args: argparse.Namespace) -> int:
    conn = _connect()
    with conn:
        run = _ensure_fit(conn, args, "fit", full=args.full)
    if run is None:
        return EXIT_USAGE
    print(_fit_line(args.skill, run))
    return EXIT_OK


def _fit_line(skill: str, run) -> str:
    if not run.fitted:
        return f"{skill}: nothing to do, the stored fit is {run.state.describe()}"
    blame = run.fit.blame_summary
    settled = "settled" if blame.get("blame_converged", True) else "NOT settled"
    kind = run.fit.effect_parameters.get("fit", "full")
    if kind == "incremental":
        kind = f"incremental, {blame.get('refitted_tips', 0)} tips refitted"
    return (f"{skill}: fitted {run.tips_with_evidence} tips with evidence ({kind}; {run.fit.rows_read:,} scored retrievals) "
            f"as of {run.state.as_of:%Y-%m-%d %H:%M:%S%z} in {run.seconds:.1f} s; blame {blame.get('blame_method')}, "
            f"{blame.get('blame_sweeps')} sweeps, {settled}, misleading share {blame.get('fitted_misleading_share')}; "
            f"was {run.state.describe()}")


def _evict(args: argparse.Namespace) -> int:
    from ctxgraph.client import Client

    conn = _connect()
    with conn:
        run = _ensure_fit(conn, args, "evict")
        if run is None:
            return EXIT_USAGE
        if not args.quiet:
            print(_fit_line(args.skill, run), file=sys.stderr)
        rows = Client(conn).evict_tips(args.skill, run.state.as_of, dry_run=not args.apply)
        conn.commit()
    verb = "retired" if args.apply else "would retire"
    print(f"{args.skill}: {verb} {len(rows)} tips as of {run.state.as_of:%Y-%m-%d %H:%M:%S%z}")
    for row in rows:
        print(f"  tip {row['tip_id']}: {row['reason']}")
    if not args.apply and rows:
        print(f"to retire them: ctxgraph evict --skill {args.skill} --apply (undo one: SELECT ctxgraph.restore_tip(...))")
    return EXIT_OK


def _audit(args: argparse.Namespace) -> int:
    from ctxgraph import reports

    conn = _connect()
    with conn:
        data = reports.collect(conn, args.skill, args.run_id, args.rule_id, args.top)
    if args.html:
        from ctxgraph import html_report

        try:
            args.html.parent.mkdir(parents=True, exist_ok=True)
            args.html.write_text(html_report.render_html(data), encoding="utf-8")
        except OSError as exc:
            print(f"ctxgraph audit: cannot write {args.html}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_USAGE
    if args.only:
        wanted = [key.strip() for key in args.only.split(",") if key.strip()]
        unknown = [key for key in wanted if data.section(key) is None]
        if unknown:
            print(f"ctxgraph audit: unknown section {', '.join(unknown)}", file=sys.stderr)
            return EXIT_USAGE
        data.sections = [s for s in data.sections if s.key in wanted]
    print(reports.render_text(data), end="")
    if args.html:
        print(f"HTML audit written to {args.html}")
    return EXIT_OK


def _evaluate(args: argparse.Namespace) -> int:
    from ctxgraph import evaluation, reports

    try:
        labels = evaluation.read_labels(args.labels, args.tips)
    except (OSError, evaluation.LabelError) as exc:
        print(f"ctxgraph evaluate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    conn = _connect()
    with conn:
        result = evaluation.evaluate_labels(conn, args.skill, labels)
    section = reports.Section("evaluation", "Legs against gold labels", result.columns, result.rows)
    print(f"ctxgraph evaluate: {result.labels} labels, {result.matched} retrievals matched"
          + (f", {len(result.unmatched)} labels matched nothing ({', '.join(result.unmatched[:5])})"
             if result.unmatched else ""))
    print(reports.render_text_section(section))
    if result.signal is not None:
        signal = reports.Section("signal", "Follow signal against gold labels", list(result.signal),
                                 [tuple(result.signal.values())])
        print(reports.render_text_section(signal))
    return EXIT_OK


def _calibrate(args: argparse.Namespace) -> int:
    import hashlib

    from ctxgraph import evaluation

    labels = None
    source = None
    if args.labels is not None:
        try:
            labels = evaluation.read_labels(args.labels, args.tips)
            digest = hashlib.sha256(args.labels.read_bytes()).hexdigest()
        except (OSError, evaluation.LabelError) as exc:
            print(f"ctxgraph calibrate: {exc}", file=sys.stderr)
            return EXIT_USAGE
        source = f"{args.labels} (sha256 {digest})"
    if args.max_disagreement >= 1:
        print("ctxgraph calibrate: --max-disagreement is a share, below 1", file=sys.stderr)
        return EXIT_USAGE
    conn = _connect()
    with conn:
        try:
            result = evaluation.calibrate(conn, args.skill, labels, folds=args.folds,
                                          max_disagreement=args.max_disagreement, source=source,
                                          save=not args.dry_run, from_default=not args.from_scratch,
                                          min_per_class=args.min_per_class)
        except evaluation.LabelError as exc:
            print(f"ctxgraph calibrate: {exc}", file=sys.stderr)
            return EXIT_USAGE
    print(result.render())
    return EXIT_OK


def _db(args: argparse.Namespace) -> int:
    from ctxgraph import db

    command = f"db {args.db_verb}"
    try:
        # verify and status take no --to; revert without one is revert --all
        return db.run(args.db_verb, to=getattr(args, "to", None))
    except db.DbError as exc:
        print(f"ctxgraph {command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"ctxgraph {command}: interrupted; sqitch deploys and reverts change by change, "
              "ctxgraph db status says where it stopped", file=sys.stderr)
        return 130


COMMANDS = {"score": _score, "load": _load, "fit": _fit, "evict": _evict, "audit": _audit, "evaluate": _evaluate,
            "simulate": _simulate, "calibrate": _calibrate, "db": _db}


def _one_line(exc: BaseException) -> str:
    """The first line of an error's message (libpq adds lines such as 'server closed the connection')."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    sqlstate = getattr(exc, "sqlstate", None)
    return f"{text} (SQLSTATE {sqlstate})" if sqlstate else text


# What an interrupted command leaves, by command (each commits as docs/cli.md says; the rest write nothing).
INTERRUPTED = {
    "score": "written rows and answered verdicts are kept, the rest is scored next time",
    "load": "the files loaded before the one being read are kept, nothing of that one",
    "simulate": "its database is dropped, nothing is kept",
    "fit": "the stored fit is the one before (a fit is written in one transaction)",
    "evict": "a refit already written is kept; retirements are one transaction, all or none",
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ctxgraph command line; return its exit status (0 ok, 2 usage, 3 database)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["db"]:
        # `ctxgraph db` only runs sqitch: parsed and run without the modules of the other commands (numpy,
        # psycopg, torch), it works where ctxgraph was installed without its dependencies, e.g. on a host
        # that only deploys the schema.
        return _db(_db_parser().parse_args(argv))
    args = build_parser().parse_args(argv)
    import psycopg

    from ctxgraph.audit_file import AuditFileError
    from ctxgraph.connection_store import DatabaseError, UnknownSkill

    command = args.command

    def fail(message: str, status: int) -> int:
        print(f"ctxgraph {command}: {message}", file=sys.stderr)
        return status

    try:
        return COMMANDS[command](args)
    except KeyboardInterrupt:
        print(f"ctxgraph {command}: interrupted; {INTERRUPTED.get(command, 'nothing was written')}", file=sys.stderr)
        return 130
    except UnknownSkill as exc:
        return fail(str(exc), EXIT_USAGE)
    except AuditFileError as exc:
        return fail(f"cannot run an audit file: {exc}", EXIT_USAGE)
    except DatabaseError as exc:
        return fail(str(exc), EXIT_DATABASE)
    except psycopg.Error as exc:
        return fail(f"database error: {_one_line(exc)}", EXIT_DATABASE)


if __name__ == "__main__":
    sys.exit(main())
