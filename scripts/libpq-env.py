"""Prints DATABASE_URL as libpq environment variables (PGHOST=..., one per line, shell-quoted).

psql, pg_prove, sqitch (target db:pg:), createdb and psycopg all honour these variables, so one
parse here points every tool at the same server.
"""
import os
import shlex
import sys
from urllib.parse import parse_qs, unquote, urlsplit

QUERY_TO_ENV = {
    "host": "PGHOST", "port": "PGPORT", "user": "PGUSER", "password": "PGPASSWORD",
    "dbname": "PGDATABASE", "sslmode": "PGSSLMODE", "sslrootcert": "PGSSLROOTCERT",
    "application_name": "PGAPPNAME", "connect_timeout": "PGCONNECT_TIMEOUT", "options": "PGOPTIONS",
}


def main() -> int:
    url = os.environ.get("DATABASE_URL", "")
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        print(f"DATABASE_URL must start with postgresql://, got {url[:30]!r}", file=sys.stderr)
        return 2
    env = {}
    if parts.hostname:
        env["PGHOST"] = unquote(parts.hostname)
    if parts.port:
        env["PGPORT"] = str(parts.port)
    if parts.username:
        env["PGUSER"] = unquote(parts.username)
    if parts.password:
        env["PGPASSWORD"] = unquote(parts.password)
    if parts.path.strip("/"):
        env["PGDATABASE"] = unquote(parts.path.lstrip("/"))
    for key, values in parse_qs(parts.query).items():
        if key in QUERY_TO_ENV:
            env[QUERY_TO_ENV[key]] = values[-1]
    for key, value in env.items():
        print(f"{key}={shlex.quote(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
