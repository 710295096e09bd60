"""``ctxgraph db``: deploy, verify, revert and report the ctxgraph schema with sqitch.

The sqitch project (sqitch.conf, sqitch.plan and the deploy, revert and verify scripts) is package data
in ``ctxgraph/sqitch``: in a checkout that folder holds symlinks to the repository root's files, in an
installed wheel it holds copies of them, so the same plan is deployed either way.

This module imports nothing outside the standard library: ``ctxgraph db`` must run where ctxgraph was
installed without its dependencies (numpy, psycopg, torch), e.g. on a host that only deploys the schema.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit

# Next to this file, not found through importlib.resources: sqitch needs a real folder to run in.
PROJECT_DIR = Path(__file__).parent / "sqitch"

VERBS = ("deploy", "verify", "revert", "status")


class DbError(Exception):
    """sqitch cannot be run: it is not on PATH, the packaged project is missing, or DATABASE_URL is no URL."""


def project_dir() -> Path:
    """The packaged sqitch project's folder (the one holding sqitch.plan)."""
    if not (PROJECT_DIR / "sqitch.plan").is_file():
        raise DbError(f"the sqitch project is missing from the ctxgraph package "
                      f"(no {PROJECT_DIR / 'sqitch.plan'}); reinstall ctxgraph")
    return PROJECT_DIR


def sqitch_target(database_url: str | None) -> tuple[str, str | None]:
    """sqitch's target for DATABASE_URL, and the URL's password (None without one).

    postgresql://user@host/db becomes db:pg://user@host/db, query parameters (host=, sslmode=...) kept: sqitch
    hands them to psql and to its own registry connection. The password is left out of the target, which
    sqitch's command line would show to every user of the host (ps), and passed in SQITCH_PASSWORD instead.
    Without DATABASE_URL the target is db:pg:, which leaves host, port, user and database to the libpq
    variables (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD), as every other ctxgraph command does.
    """
    if not database_url:
        return "db:pg:", None
    try:
        parts = urlsplit(database_url)
    except ValueError as exc:  # e.g. an unclosed [ of an IPv6 host
        raise DbError(f"DATABASE_URL is not a URL: {exc}") from None
    if parts.scheme not in ("postgresql", "postgres") or not database_url.startswith(f"{parts.scheme}://"):
        raise DbError("DATABASE_URL must be a postgresql:// URL for ctxgraph db (sqitch takes URIs); "
                      "or unset it and name the database with PGHOST, PGPORT, PGUSER and PGDATABASE")
    # Path, query and fragment are kept as written; only the scheme and the password change.
    rest = database_url[len(f"{parts.scheme}://{parts.netloc}"):]
    netloc = parts.netloc
    password = None
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, has_password, secret = userinfo.partition(":")
        if has_password:
            password = unquote(secret)
        netloc = f"{user}@{hostport}" if user else hostport
    return f"db:pg://{netloc}{rest}", password


def sqitch_command(verb: str, target: str, *, to: str | None = None) -> list[str]:
    """The sqitch command line for one verb; revert without ``to`` reverts every change."""
    if verb not in VERBS:
        raise ValueError(f"unknown verb {verb!r}")
    command = ["sqitch", verb, "--target", target]
    if verb == "revert":
        command.append("-y")  # the caller chose how far with --to or --all: sqitch must not ask again
    if to is not None:
        command += ["--to", to]
    return command


def run(verb: str, *, to: str | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run ``sqitch VERB`` on the packaged project against DATABASE_URL (else the libpq variables).

    sqitch's output is not captured: it reaches the terminal as sqitch writes it, and sqitch's exit status
    is returned (128 + N when a signal N ended it). DbError before anything runs.
    """
    env = dict(os.environ if environ is None else environ)
    executable = shutil.which("sqitch", path=env.get("PATH", os.defpath))
    if executable is None:
        raise DbError("sqitch is not on PATH: install it (https://sqitch.org/download/; "
                      "in a checkout, make provision-system)")
    folder = project_dir()
    target, password = sqitch_target(env.get("DATABASE_URL"))
    if password is not None:
        env["SQITCH_PASSWORD"] = password
    command = sqitch_command(verb, target, to=to)
    command[0] = executable
    # Run in the project folder: its sqitch.conf names the plan and the scripts' folder relative to it.
    process = subprocess.Popen(command, cwd=folder, env=env)
    try:
        status = process.wait()
    except KeyboardInterrupt:
        # Ctrl-C reached sqitch too: let it end on its own terms, so that the change under way is rolled
        # back and the registry stays true to the schema (a second Ctrl-C stops waiting).
        process.wait()
        raise
    return 128 - status if status < 0 else status
