"""The wheel deploys itself: built from the checkout and installed with --no-deps into a fresh venv
(no numpy, psycopg or torch there), its `ctxgraph db` verbs run the sqitch project the wheel carries
against a throwaway database, from a folder outside the checkout.

The wheel is built from a copy of the checkout, so no build/ or *.egg-info is left in the checkout, and
without the network (no build isolation, no index): setuptools comes from the venv running the tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from ctxgraph import db

ROOT = Path(__file__).resolve().parent.parent
# What the copy leaves out: the git and venv folders, the embedded cluster, outputs and earlier builds.
NOT_COPIED = shutil.ignore_patterns(".git", ".venv", ".pgdata", "build", "dist", "out", "*.egg-info",
                                    "__pycache__", ".*_cache")
SQITCH_FOLDERS = ("deploy", "revert", "verify")
# An early change of sqitch.plan: its schema stays, every table after it goes.
EARLY_CHANGE = "schema_ctxgraph"


def sqitch_project_files(root: Path) -> set[str]:
    """The sqitch project's files, relative to the folder holding sqitch.plan."""
    names = {"sqitch.plan", "sqitch.conf"}
    for folder in SQITCH_FOLDERS:
        names |= {f"{folder}/{path.name}" for path in (root / folder).iterdir() if path.is_file()}
    return names


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, the copy of the checkout it was built from)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    # symlinks=True: the package's sqitch/ and audit/ links stay links, and point into the copy.
    shutil.copytree(ROOT, source, symlinks=True, ignore=NOT_COPIED)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                           "--no-index", "--quiet", "--wheel-dir", str(work / "dist"), str(source)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = (work / "dist").glob("ctxgraph-*.whl")
    return wheel, source


@pytest.fixture(scope="module")
def venv(built: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel and nothing of its dependencies."""
    wheel, _ = built
    folder = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=600)
    done = subprocess.run([str(folder / "bin" / "python"), "-m", "pip", "install", "--no-deps", "--no-index",
                           "--quiet", "--disable-pip-version-check", str(wheel)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A working folder outside the checkout: nothing is found relative to the current directory."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    return folder


def clean_env(**changes: str | None) -> dict[str, str]:
    """os.environ without PYTHONPATH (which could reach the checkout's scorer/), with the changes made."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def ctxgraph(venv: Path, cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "ctxgraph"), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


def said(result: subprocess.CompletedProcess) -> str:
    return f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


def url_for(database_url: str, dbname: str) -> str:
    """DATABASE_URL naming another database of the same server."""
    parts = urlsplit(database_url)
    assert parts.scheme in ("postgresql", "postgres"), "these tests need DATABASE_URL as a postgresql:// URL"
    query = urlencode([(key, value) for key, value in parse_qsl(parts.query) if key != "dbname"], safe="/")
    # By hand: urlunsplit would write postgresql:///db (no host: the libpq variables') as postgresql:/db.
    return f"{parts.scheme}://{parts.netloc}/{quote(dbname)}" + (f"?{query}" if query else "")


def libpq_env(url: str) -> dict[str, str]:
    """The libpq variables naming the database of url (for the target db:pg:, DATABASE_URL unset)."""
    variables = {"host": "PGHOST", "port": "PGPORT", "user": "PGUSER", "password": "PGPASSWORD",
                 "dbname": "PGDATABASE", "sslmode": "PGSSLMODE"}
    return {variables[key]: str(value) for key, value in conninfo_to_dict(url).items() if key in variables}


@pytest.fixture
def throwaway(database_url: str) -> Iterator[str]:
    """A database created empty on DATABASE_URL's server, dropped at the end; its URL."""
    name = f"ctxgraph_wheel_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield url_for(database_url, name)
    finally:
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def schema_state(url: str) -> dict[str, object]:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            """SELECT to_regnamespace('ctxgraph') IS NOT NULL,
                      to_regclass('ctxgraph.parameters') IS NOT NULL,
                      to_regnamespace('stig') IS NOT NULL,
                      to_regclass('sqitch.changes') IS NOT NULL""").fetchone()
        changes: list[str] = []
        if row[3]:
            changes = [change for (change,) in conn.execute(
                "SELECT change FROM sqitch.changes WHERE project = 'ctxgraph'")]
    return {"schema": row[0], "parameters": row[1], "stig": row[2], "deployed": changes}


def plan_changes(plan: Path) -> list[str]:
    """The change names of a sqitch plan, in order (pragmas, tags, comments and blank lines skipped)."""
    lines = plan.read_text(encoding="utf-8").splitlines()
    return [line.split()[0] for line in lines
            if line.strip() and line[0] not in "%@#" and not line[0].isspace()]


def test_the_wheel_carries_the_whole_sqitch_project(built: tuple[Path, Path]) -> None:
    wheel, source = built
    expected = sqitch_project_files(source)
    assert len(expected) > 2 + len(SQITCH_FOLDERS)
    with zipfile.ZipFile(wheel) as archive:
        packaged = {name.removeprefix("ctxgraph/sqitch/") for name in archive.namelist()
                    if name.startswith("ctxgraph/sqitch/")}
        assert packaged == expected
        # The files themselves, not the links to them: the symlinks were followed.
        different = [name for name in sorted(expected)
                     if archive.read(f"ctxgraph/sqitch/{name}") != (source / name).read_bytes()]
        assert different == []
        assert any(name.startswith("ctxgraph/audit/") for name in archive.namelist())


def test_the_installed_package_finds_its_project_and_runs_without_its_dependencies(venv: Path,
                                                                                    outside: Path) -> None:
    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import importlib.util, ctxgraph.db as db\n"
         "print(db.project_dir())\n"
         "heavy = ('numpy', 'psycopg', 'torch', 'sentence_transformers')\n"
         "print(*[m for m in heavy if importlib.util.find_spec(m)])"],
        cwd=outside, env=clean_env(), capture_output=True, text=True, timeout=120, check=False)
    assert probe.returncode == 0, said(probe)
    folder, present = probe.stdout.splitlines()
    folder = Path(folder)
    assert folder.is_relative_to(venv) and not folder.is_symlink()
    assert (folder / "sqitch.plan").is_file() and not (folder / "sqitch.plan").is_symlink()
    assert present == "", "the venv was to hold the wheel alone"


def test_from_a_checkout_the_project_is_the_repository_root() -> None:
    folder = db.project_dir()
    assert (folder / "sqitch.plan").resolve() == (ROOT / "sqitch.plan").resolve()
    assert sqitch_project_files(folder) == sqitch_project_files(ROOT)


@pytest.mark.parametrize(("database_url", "target", "password"), [
    (None, "db:pg:", None),
    ("", "db:pg:", None),
    ("postgresql:///ctxgraph?host=/run/pg&port=5433", "db:pg:///ctxgraph?host=/run/pg&port=5433", None),
    ("postgres://scorer:p%40ss@db.example:5432/ctxgraph?sslmode=require",
     "db:pg://scorer@db.example:5432/ctxgraph?sslmode=require", "p@ss"),
    ("postgresql://[::1]:5432/ctxgraph", "db:pg://[::1]:5432/ctxgraph", None),
])
def test_database_url_becomes_a_sqitch_target_without_its_password(database_url, target, password) -> None:
    assert db.sqitch_target(database_url) == (target, password)


@pytest.mark.parametrize("database_url",
                         ["host=db dbname=ctxgraph", "mysql://db/ctxgraph", "postgresql:/ctxgraph"])
def test_a_database_url_sqitch_cannot_take_is_refused(database_url: str) -> None:
    with pytest.raises(db.DbError, match="postgresql:// URL"):
        db.sqitch_target(database_url)


def test_usage_errors_exit_2(venv: Path, outside: Path) -> None:
    # revert never reverts everything by default: it says how far.
    result = ctxgraph(venv, outside, "db", "revert", env=clean_env())
    assert result.returncode == 2, said(result)
    assert "--to" in result.stderr and "--all" in result.stderr

    result = ctxgraph(venv, outside, "db", "status", env=clean_env(PATH=str(venv / "bin")))
    assert result.returncode == 2, said(result)
    assert result.stderr.strip() == ("ctxgraph db status: sqitch is not on PATH: install it "
                                     "(https://sqitch.org/download/; in a checkout, make provision-system)")

    result = ctxgraph(venv, outside, "db", "verify", env=clean_env(DATABASE_URL="host=db dbname=ctxgraph"))
    assert result.returncode == 2, said(result)
    assert result.stderr.startswith("ctxgraph db verify: DATABASE_URL must be a postgresql:// URL")


def test_the_installed_wheel_deploys_verifies_and_reverts_a_database(
        venv: Path, outside: Path, throwaway: str, built: tuple[Path, Path]) -> None:
    _, source = built
    changes = plan_changes(source / "sqitch.plan")
    assert EARLY_CHANGE in changes[:5]
    by_url = clean_env(DATABASE_URL=throwaway)
    by_libpq = clean_env(DATABASE_URL=None, **libpq_env(throwaway))

    # sqitch's exit status is the command's, a failure's included; nothing was deployed.
    result = ctxgraph(venv, outside, "db", "deploy", "--to", "no_such_change", env=by_url)
    assert result.returncode != 0, said(result)
    assert "no_such_change" in result.stdout + result.stderr

    result = ctxgraph(venv, outside, "db", "deploy", env=by_url)
    assert result.returncode == 0, said(result)
    assert f"+ {changes[-1]} " in result.stdout
    state = schema_state(throwaway)
    assert state["schema"] and state["parameters"] and state["stig"]
    assert sorted(state["deployed"]) == sorted(changes)

    for env in (by_url, by_libpq):  # DATABASE_URL, else the libpq variables (target db:pg:)
        result = ctxgraph(venv, outside, "db", "status", env=env)
        assert result.returncode == 0, said(result)
        assert "Nothing to deploy (up-to-date)" in result.stdout
        assert conninfo_to_dict(throwaway)["dbname"] in result.stdout  # the throwaway database, not another

    result = ctxgraph(venv, outside, "db", "verify", env=by_url)
    assert result.returncode == 0, said(result)
    assert "Verify successful" in result.stdout

    result = ctxgraph(venv, outside, "db", "revert", "--to", EARLY_CHANGE, env=by_url)
    assert result.returncode == 0, said(result)
    state = schema_state(throwaway)
    assert state["schema"] and not state["parameters"] and not state["stig"]
    assert sorted(state["deployed"]) == sorted(changes[:changes.index(EARLY_CHANGE) + 1])
    result = ctxgraph(venv, outside, "db", "status", env=by_libpq)
    assert result.returncode == 0, said(result)
    assert "Undeployed changes" in result.stdout and changes[-1] in result.stdout

    result = ctxgraph(venv, outside, "db", "revert", "--all", env=by_url)
    assert result.returncode == 0, said(result)
    state = schema_state(throwaway)
    assert not state["schema"] and not state["stig"]
    assert state["deployed"] == []
