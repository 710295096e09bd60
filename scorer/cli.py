"""The ``ctxgraph`` command: ``score`` (the end-of-run scoring pass); more subcommands beside it.

Exit status: 0 when the command completed (a pass with per-row NULLs has completed), 2 for usage
errors (bad arguments, unreadable run log, unknown skill), 3 when the database cannot be reached.
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
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxgraph",
        description="Outcome attribution for agent memory. The database comes from DATABASE_URL "
        "(else the libpq variables PGHOST, PGPORT, PGUSER, PGDATABASE).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

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
        default=os.environ.get("CTXGRAPH_JUDGE_URL"),
        help="OpenAI-compatible base URL of the judge, e.g. http://127.0.0.1:8000/v1 (default: CTXGRAPH_JUDGE_URL)",
    )
    score.add_argument(
        "--judge-model",
        default=os.environ.get("CTXGRAPH_JUDGE_MODEL"),
        help="judge model name (default: CTXGRAPH_JUDGE_MODEL, else the server's first listed model)",
    )
    score.add_argument("--concurrency", type=_positive_int, default=8, help="judge requests in flight (default 8)")
    score.add_argument("--judge-timeout", type=_positive_float, default=60.0, help="seconds per judge request")
    score.add_argument("--batch-size", type=_positive_int, default=256, help="retrievals per committed batch")
    score.add_argument("--no-judge", action="store_true", help="skip the LLM judge leg")
    score.add_argument("--no-embed", action="store_true", help="skip the embedding leg")
    score.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser


def _score(args: argparse.Namespace) -> int:
    from scorer import dream, store

    if not args.log.is_file():
        print(f"ctxgraph score: run log not found: {args.log}", file=sys.stderr)
        return EXIT_USAGE
    config = dream.PassConfig(
        skill=args.skill,
        run_id=args.run_id,
        log_path=args.log,
        judge_url=args.judge_url or None,
        judge_model=args.judge_model or None,
        concurrency=args.concurrency,
        judge_timeout=args.judge_timeout,
        use_judge=not args.no_judge,
        use_embed=not args.no_embed,
        batch_size=args.batch_size,
    )
    try:
        conn = store.connect()
    except store.DatabaseError as exc:
        print(f"ctxgraph score: {exc}", file=sys.stderr)
        return EXIT_DATABASE

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    try:
        with conn:
            summary = dream.run_pass(conn, config, progress)
    except store.DatabaseError as exc:
        print(f"ctxgraph score: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"ctxgraph score: cannot read the run log: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(summary.render())
    return EXIT_OK


COMMANDS = {"score": _score}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ctxgraph command line; return its exit status."""
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("ctxgraph: interrupted; committed batches are kept, the rest is scored next time", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
