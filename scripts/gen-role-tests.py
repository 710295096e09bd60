#!/usr/bin/env python3
"""Write tests/pgtap/10-role-matrix.sql and docs/operations.md's role matrix from docs/role-matrix.csv.

The matrix (docs/role-matrix.csv: one row per object or group of objects, columns kind, object,
writer, scorer, ranker, analyst, why) is the only statement of who may do what. This script turns it
into an exact-plan pgTAP file that checks every object of schema ctxgraph and of every skill schema as
every role, both ways, plus PUBLIC (as a fresh role with no grants), and that fails when the catalog
holds an object the matrix does not name; and it writes the matrix as Markdown tables between
``<!-- role-matrix:begin -->`` and ``<!-- role-matrix:end -->`` in docs/operations.md. Standard library
only; the output is deterministic, so scripts/check-generated.sh can diff a fresh run against the
committed files.

    python3 scripts/gen-role-tests.py                  # rewrite the pgTAP file and the docs block
    python3 scripts/gen-role-tests.py --output -       # print the pgTAP file instead; still rewrite the block
    python3 scripts/gen-role-tests.py --docs other.md  # rewrite the block in another page
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MATRIX_NAME = "docs/role-matrix.csv"
DOCS_NAME = "docs/operations.md"
COLUMNS = ("kind", "object", "writer", "scorer", "ranker", "analyst", "why")
BEGIN_MARK = "<!-- role-matrix:begin -->"
END_MARK = "<!-- role-matrix:end -->"

# The skill schemas a fresh deploy creates; the test also checks ctxgraph.skills holds exactly these,
# so a third skill in the deploy scripts makes the test fail until it is added here.
SKILLS = ("stig", "cve")
SCHEMAS = ("ctxgraph",) + SKILLS
ROLES = ("writer", "scorer", "ranker", "analyst")
# A role with no grants and no memberships: it holds exactly what PUBLIC holds. Created and dropped
# inside the test's transaction.
PROBE = "ctxgraph_roles_probe"
PRIVATE_GROUP = "ctxgraph._*"

VALID_PRIVS = {
    "schema": {"USAGE", "CREATE"},
    "table": {"SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"},
    "view": {"SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"},
    "sequence": {"USAGE", "SELECT", "UPDATE"},
    "function": {"EXECUTE"},
}
COLUMN_PRIVS = ("INSERT", "REFERENCES", "SELECT", "UPDATE")
TYPE_ALIASES = {
    "timestamptz": "timestamp with time zone",
    "timestamp": "timestamp without time zone",
    "int": "integer",
    "int4": "integer",
    "int8": "bigint",
    "int2": "smallint",
    "float8": "double precision",
    "float4": "real",
    "bool": "boolean",
    "varchar": "character varying",
}


class MatrixError(Exception):
    """The matrix cannot be read; the message names the line."""


@dataclass(frozen=True)
class Grant:
    """What one role holds on one object: table-level privileges and column privileges."""

    privs: tuple[str, ...]
    columns: tuple[tuple[str, str], ...] = ()  # (privilege, column)


@dataclass
class Entry:
    """One object of the expanded matrix."""

    kind: str  # schema | table | view | sequence | function
    name: str  # schema, schema.relation or schema.function(type, type)
    grants: dict[str, Grant]
    why: str
    line: int

    @property
    def schema(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def relname(self) -> str:
        return self.name.split(".", 1)[1]


@dataclass(frozen=True)
class Row:
    """One row of the matrix file, as written: what the docs table shows."""

    kind: str
    objects: str  # the object cell: `name`s separated by commas
    cells: tuple[str, ...]  # one per role, in ROLES order
    why: str


@dataclass
class Matrix:
    entries: list[Entry] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    private_group: dict[str, Grant] | None = None


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split on sep outside parentheses."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def normalise_type(t: str) -> str:
    t = " ".join(t.split())
    suffix = ""
    while t.endswith("[]"):
        suffix += "[]"
        t = t[:-2].strip()
    return TYPE_ALIASES.get(t, t) + suffix


def normalise_function(sig: str, where: str, line: int) -> str:
    m = re.fullmatch(r"([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\((.*)\)", sig.strip())
    if not m:
        raise MatrixError(f"{where} line {line}: not a function signature: {sig!r}")
    args = [normalise_type(a) for a in split_top(m.group(3))]
    return f"{m.group(1)}.{m.group(2)}({', '.join(args)})"


def parse_cell(cell: str, kind: str, where: str, line: int) -> Grant:
    cell = cell.strip()
    if cell == "-":
        return Grant(())
    privs: list[str] = []
    columns: list[tuple[str, str]] = []
    for token in split_top(cell):
        m = re.fullmatch(r"([A-Z]+)(?:\s*\(([^()]*)\))?", token)
        if not m or m.group(1) not in VALID_PRIVS[kind]:
            raise MatrixError(f"{where} line {line}: {token!r} is not a {kind} privilege")
        if m.group(2) is None:
            privs.append(m.group(1))
        else:
            if kind not in ("table", "view") or m.group(1) not in COLUMN_PRIVS:
                raise MatrixError(f"{where} line {line}: column privilege {token!r} on a {kind}")
            for col in split_top(m.group(2)):
                if not re.fullmatch(r"[a-z_][a-z0-9_]*", col):
                    raise MatrixError(f"{where} line {line}: bad column name {col!r}")
                columns.append((m.group(1), col))
    if len(set(privs)) != len(privs) or len(set(columns)) != len(columns):
        raise MatrixError(f"{where} line {line}: a privilege is listed twice in {cell!r}")
    for priv, col in columns:
        if priv in privs:
            raise MatrixError(f"{where} line {line}: {priv} ({col}) is already implied by table-level {priv}")
    return Grant(tuple(sorted(privs)), tuple(sorted(columns)))


def expand(name: str) -> list[str]:
    if name.startswith("<skill>"):
        return [name.replace("<skill>", s, 1) for s in SKILLS]
    return [name]


def parse_matrix(text: str, where: str = MATRIX_NAME) -> Matrix:
    """Read the matrix from CSV text: a header row, then one row per object group, in order."""
    reader = csv.reader(io.StringIO(text, newline=""))
    matrix = Matrix()
    seen: dict[str, int] = {}
    header_seen = False
    for cells in reader:
        lineno = reader.line_num
        if not header_seen:
            if [c.strip() for c in cells] != list(COLUMNS):
                raise MatrixError(f"{where} line {lineno}: the header must be {','.join(COLUMNS)}")
            header_seen = True
            continue
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(COLUMNS):
            raise MatrixError(f"{where} line {lineno}: {len(cells)} cells, the header has {len(COLUMNS)}")
        cells = [c.strip() for c in cells]
        kind = cells[0]
        if kind not in VALID_PRIVS:
            raise MatrixError(f"{where} line {lineno}: kind {kind!r} is not one of {sorted(VALID_PRIVS)}")
        names = re.findall(r"`([^`]+)`", cells[1])
        if not names or re.sub(r"`[^`]+`", "", cells[1]).replace(",", "").strip():
            raise MatrixError(f"{where} line {lineno}: the object cell must be `object`s separated by commas")
        grants = {role: parse_cell(cell, kind, where, lineno) for role, cell in zip(ROLES, cells[2:6])}
        why = cells[6]
        matrix.rows.append(Row(kind, cells[1], tuple(cells[2:6]), why))
        for name in names:
            if name == PRIVATE_GROUP:
                if kind != "function" or matrix.private_group is not None:
                    raise MatrixError(f"{where} line {lineno}: {PRIVATE_GROUP} belongs once,"
                                      " in a function row")
                matrix.private_group = grants
                continue
            if kind == "function":
                name = normalise_function(name, where, lineno)
            elif kind == "schema":
                if not re.fullmatch(r"[a-z_][a-z0-9_]*|<skill>", name):
                    raise MatrixError(f"{where} line {lineno}: bad schema name {name!r}")
            elif not re.fullmatch(r"(?:[a-z_][a-z0-9_]*|<skill>)\.[a-z_][a-z0-9_]*", name):
                raise MatrixError(f"{where} line {lineno}: bad {kind} name {name!r}")
            for full in expand(name):
                schema = full.split(".", 1)[0].split("(", 1)[0]
                if schema not in SCHEMAS:
                    raise MatrixError(f"{where} line {lineno}: {full} is outside the schemas {SCHEMAS}")
                if full in seen:
                    raise MatrixError(f"{where} line {lineno}: {full} is already on line {seen[full]}")
                seen[full] = lineno
                matrix.entries.append(Entry(kind, full, grants, why, lineno))
    if not header_seen:
        raise MatrixError(f"{where}: empty; the header must be {','.join(COLUMNS)}")
    if matrix.private_group is None:
        raise MatrixError(f"{where}: the matrix needs a function row for {PRIVATE_GROUP} (private helpers)")
    if any(g.privs for g in matrix.private_group.values()):
        raise MatrixError(f"{where}: {PRIVATE_GROUP} is owner only; list a private function that a role "
                          "executes on a row of its own")
    return matrix


# ---------------------------------------------------------------------------------------------
# Markdown (the block the docs page shows)
# ---------------------------------------------------------------------------------------------

def markdown_tables(matrix: Matrix) -> str:
    """The matrix as Markdown: one table per kind, in the order the kinds first appear."""
    kinds: list[str] = []
    for row in matrix.rows:
        if row.kind not in kinds:
            kinds.append(row.kind)
    tables = []
    for kind in kinds:
        lines = [f"| {kind} | {' | '.join(ROLES)} | why |", "|" + "---|" * (len(ROLES) + 2)]
        for row in matrix.rows:
            if row.kind == kind:
                cells = (row.objects, *row.cells, row.why)
                lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        tables.append("\n".join(lines))
    return "\n\n".join(tables) + "\n"


def replace_block(page: str, block: str, where: str) -> str:
    """page with the lines between the two marker lines replaced by block."""
    lines = page.splitlines(keepends=True)
    marks = [line.rstrip("\r\n") for line in lines]
    if marks.count(BEGIN_MARK) != 1 or marks.count(END_MARK) != 1:
        raise MatrixError(f"{where}: needs the lines {BEGIN_MARK} and {END_MARK}, once each")
    start, end = marks.index(BEGIN_MARK), marks.index(END_MARK)
    if end < start:
        raise MatrixError(f"{where}: the end marker comes before the begin marker")
    return "".join(lines[:start + 1]) + block + "".join(lines[end:])


# ---------------------------------------------------------------------------------------------
# SQL
# ---------------------------------------------------------------------------------------------

def lit(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def text_array(items: list[str] | tuple[str, ...]) -> str:
    if not items:
        return "'{}'::text[]"
    return "ARRAY[" + ", ".join(lit(i) for i in items) + "]::text[]"


def name_array(items: list[str] | tuple[str, ...]) -> str:
    if not items:
        return "'{}'::name[]"
    return "ARRAY[" + ", ".join(lit(i) for i in items) + "]::name[]"


def role_name(role: str) -> str:
    return f"ctxgraph_{role}"


def who(role: str) -> str:
    return "PUBLIC (a role with no grants)" if role == PROBE else role


def describe(privs: tuple[str, ...]) -> str:
    return "exactly {" + ", ".join(privs) + "}" if privs else "no privileges"


def function_parts(name: str) -> tuple[str, str, list[str]]:
    m = re.fullmatch(r"([a-z_0-9]+)\.([a-z_0-9]+)\((.*)\)", name)
    assert m
    return m.group(1), m.group(2), split_top(m.group(3))


class Plan:
    """Collects assertions; each add() is one test in the plan."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.count = 0

    def comment(self, text: str) -> None:
        self.parts.append("")
        self.parts.append("-- " + "-" * 93)
        for line in text.splitlines():
            self.parts.append(("-- " + line).rstrip())
        self.parts.append("-- " + "-" * 93)

    def raw(self, sql: str) -> None:
        self.parts.append(sql)

    def add(self, sql: str) -> None:
        self.parts.append(sql.rstrip().rstrip(";") + ";")
        self.count += 1


def private_rows(matrix: Matrix) -> list[str]:
    """The private ctxgraph._ functions that have a row of their own (outside the owner-only group)."""
    return sorted(e.name for e in matrix.entries
                  if e.kind == "function" and e.schema == "ctxgraph" and e.relname.startswith("_"))


def catalog_objects_sql(matrix: Matrix) -> str:
    explicit_private = private_rows(matrix)
    schemas = ", ".join(lit(s) for s in SCHEMAS)
    return f"""$$SELECT CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'table' WHEN 'v' THEN 'view'
                             WHEN 'S' THEN 'sequence' WHEN 'm' THEN 'materialized view'
                             ELSE 'foreign table' END::text,
               format('%s.%s', n.nspname, c.relname)
          FROM pg_catalog.pg_class AS c
          JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
         WHERE n.nspname IN ({schemas}) AND c.relkind IN ('r', 'p', 'v', 'S', 'm', 'f')
           AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend AS d
                            WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = c.oid
                              AND d.deptype = 'e')
        UNION ALL
        SELECT 'function', format('%s.%s(%s)', n.nspname, p.proname, pg_catalog.oidvectortypes(p.proargtypes))
          FROM pg_catalog.pg_proc AS p
          JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
         WHERE n.nspname IN ({schemas})
           AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend AS d
                            WHERE d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid
                              AND d.deptype = 'e')
           AND (n.nspname <> 'ctxgraph' OR p.proname NOT LIKE '\\_%'
                OR format('%s.%s(%s)', n.nspname, p.proname, pg_catalog.oidvectortypes(p.proargtypes))
                   = ANY ({text_array(explicit_private)}))$$"""


def matrix_objects_sql(matrix: Matrix) -> str:
    rows = [f"({lit(e.kind)}, {lit(e.name)})" for e in matrix.entries if e.kind != "schema"]
    body = ",\n                 ".join(rows)
    return f"$$VALUES {body}$$"


def readable(matrix: Matrix, role: str) -> list[str]:
    return [e.name for e in matrix.entries
            if e.kind in ("table", "view") and "SELECT" in e.grants[role].privs]


def read_all_block(rels: list[str]) -> str:
    arr = (",\n" + " " * 31).join(lit(r) for r in rels)
    return f"""$sql$DO $do$
DECLARE
    rel    text;
    denied text[] := '{{}}';
BEGIN
    FOREACH rel IN ARRAY ARRAY[{arr}] LOOP
        BEGIN
            EXECUTE format('SELECT 1 FROM %s LIMIT 1', rel);
        EXCEPTION WHEN insufficient_privilege THEN
            denied := denied || format('%s: %s', rel, SQLERRM);
        END;
    END LOOP;
    IF cardinality(denied) > 0 THEN
        RAISE EXCEPTION '%', array_to_string(denied, '; ') USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$do$$sql$"""


@dataclass(frozen=True)
class Attempt:
    """One statement run as a role: it must succeed (denied None) or fail with 42501 and this message."""

    sql: str
    description: str
    denied: str | None = None


AS_OF = "'2026-12-01 00:00:00+00'"
# Besides these, each role reads every table and view the matrix grants it SELECT on (one
# assertion per role, generated from the matrix). :roles_tip and :roles_attempt are the rows built
# before the attempts.
REAL_ATTEMPTS: list[tuple[str, list[Attempt]]] = [
    ("ctxgraph_ranker", [
        Attempt("SELECT * FROM ctxgraph.rule_ranking('stig', 'V-roles-1')",
                "ctxgraph_ranker: runs ctxgraph.rule_ranking, the before/after query of the README's tour"),
        Attempt(f"SELECT * FROM ctxgraph.tip_evidence('stig', {AS_OF})",
                "ctxgraph_ranker: runs ctxgraph.tip_evidence, the evidence behind eviction"),
        Attempt("SELECT tip_id, hit_rate FROM stig.tip_hit_rates"
                " WHERE tip_id = ANY (ARRAY[:roles_tip]) AND NOT retired",
                "ctxgraph_ranker: the ranker's candidate read of stig.tip_hit_rates works"),
        Attempt("SELECT count(*) FROM stig.tip_retrievals",
                "ctxgraph_ranker: reading the retrieval log directly is refused (42501)",
                "table tip_retrievals"),
        Attempt("SELECT count(*) FROM stig.follow_anomalies",
                "ctxgraph_ranker: the analysts' audit views are refused (42501)",
                "view follow_anomalies"),
        Attempt("UPDATE stig.tips SET body = 'rewritten' WHERE id = :roles_tip",
                "ctxgraph_ranker: UPDATE of a tip is refused (42501)", "table tips"),
    ]),
    ("ctxgraph_writer", [
        Attempt(f"SELECT * FROM ctxgraph.evict_tips('stig', {AS_OF}, true)",
                "ctxgraph_writer: runs the eviction dry run"),
        Attempt("UPDATE stig.tip_retrievals SET tip_followed_llm = true WHERE attempt_id = :roles_attempt",
                "ctxgraph_writer: UPDATE of a DEF-27 column is refused (42501)", "table tip_retrievals"),
        Attempt("DELETE FROM stig.tips WHERE id = :roles_tip",
                "ctxgraph_writer: DELETE of a tip is refused (42501)", "table tips"),
    ]),
    ("ctxgraph_scorer", [
        Attempt("UPDATE stig.tip_retrievals SET tip_followed_llm = true, tip_followed_emb = 0.7,"
                " tip_followed_computed_at = '2026-11-30 00:00:00+00' WHERE attempt_id = :roles_attempt",
                "ctxgraph_scorer: UPDATE of the three DEF-27 columns works"),
        Attempt("INSERT INTO ctxgraph.follow_verdicts"
                " (tip_sha256, script_sha256, model, prompt_sha256, followed) VALUES"
                " (repeat('a', 64), repeat('b', 64), 'roles-test', repeat('c', 64), true)",
                "ctxgraph_scorer: INSERT into its verdict cache works"),
        Attempt("UPDATE stig.tip_retrievals SET outcome_value = 1.0 WHERE attempt_id = :roles_attempt",
                "ctxgraph_scorer: UPDATE of outcome_value is refused (42501)", "table tip_retrievals"),
        Attempt("DELETE FROM ctxgraph.follow_verdicts",
                "ctxgraph_scorer: DELETE from its cache is refused (42501)", "table follow_verdicts"),
    ]),
    ("ctxgraph_analyst", [
        Attempt("SELECT * FROM ctxgraph.follow_label_metrics('stig',"
                " ARRAY(SELECT id FROM stig.tip_retrievals WHERE attempt_id = :roles_attempt), ARRAY[true])",
                "ctxgraph_analyst: runs ctxgraph.follow_label_metrics"),
        Attempt("UPDATE stig.tips SET body = 'rewritten' WHERE id = :roles_tip",
                "ctxgraph_analyst: UPDATE is refused (42501)", "table tips"),
        Attempt("SELECT * FROM ctxgraph.evict_tips('stig')",
                "ctxgraph_analyst: eviction is refused (42501)", "function evict_tips"),
    ]),
    (PROBE, [
        Attempt(f"SELECT * FROM ctxgraph.tip_evidence('stig', {AS_OF})",
                "PUBLIC: ctxgraph.tip_evidence (SECURITY DEFINER, reads the whole log) is refused (42501)",
                "function tip_evidence"),
        Attempt("SELECT count(*) FROM stig.tips",
                "PUBLIC: reading stig.tips is refused (42501)", "table tips"),
    ]),
]


def generate(matrix: Matrix) -> str:
    p = Plan()
    all_roles = [role_name(r) for r in ROLES] + [PROBE]

    def grant_of(entry: Entry, role: str) -> Grant:
        return Grant(()) if role == PROBE else entry.grants[role[len("ctxgraph_"):]]

    p.comment("The skill schemas the matrix expands <skill> to (1).")
    p.add(f"SELECT set_eq('SELECT name FROM ctxgraph.skills', {text_array(sorted(SKILLS))},\n"
          f"              'the skills are exactly {', '.join(sorted(SKILLS))}:"
          " the schemas the matrix expands <skill> to')")

    p.comment("Completeness (1): every relation and function in the catalog has a matrix row, and every row\n"
              f"names an object that exists. Private ctxgraph._* functions are the {PRIVATE_GROUP} row\n"
              "(owner only), checked below, unless a row of their own names them.")
    p.add(f"SELECT set_eq(\n    {catalog_objects_sql(matrix)},\n"
          f"    {matrix_objects_sql(matrix)},\n"
          "    'the catalog''s relations and functions in ctxgraph, stig and cve"
          " are exactly the role matrix''s rows')")

    schemas = [e for e in matrix.entries if e.kind == "schema"]
    p.comment(f"Schemas ({len(schemas) * len(all_roles)}): each role's privileges, both ways.")
    for e in schemas:
        for role in all_roles:
            g = grant_of(e, role)
            p.add(f"SELECT schema_privs_are({lit(e.name)}, {lit(role)}, {name_array(g.privs)},\n"
                  f"                        {lit(f'{who(role)} has {describe(g.privs)} on schema {e.name}')}"
                  ")")

    rels = [e for e in matrix.entries if e.kind in ("table", "view", "sequence")]
    p.comment(f"Relations ({len(rels) * len(all_roles)}): table-level privileges of each role, both ways\n"
              "(SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER; USAGE, SELECT, UPDATE on\n"
              "sequences).")
    for e in rels:
        fn = "sequence_privs_are" if e.kind == "sequence" else "table_privs_are"
        for role in all_roles:
            g = grant_of(e, role)
            p.add(f"SELECT {fn}({lit(e.schema)}, {lit(e.relname)}, {lit(role)}, {name_array(g.privs)},\n"
                  f"                       {lit(f'{who(role)} has {describe(g.privs)} on {e.kind} {e.name}')}"
                  ")")

    tabular = [e for e in matrix.entries if e.kind in ("table", "view")]
    p.comment(f"Column privileges ({len(tabular)}): per table and view, every column privilege a role holds\n"
              "beyond its table-level privileges (what a column GRANT adds), all roles at once, both ways.")
    role_list = ", ".join(lit(r) for r in all_roles)
    for e in tabular:
        expected = sorted(f"{'PUBLIC' if role == PROBE else role} {priv} ({col})"
                          for role in all_roles for priv, col in grant_of(e, role).columns)
        desc = (f"column grants on {e.name}: " + (", ".join(expected) if expected else "none"))
        p.add(f"""SELECT is(ARRAY(SELECT s.v FROM (
                 SELECT format('%s %s (%s)', CASE WHEN r.name = {lit(PROBE)} THEN 'PUBLIC' ELSE r.name END,
                               x.priv, a.attname)
                   FROM pg_catalog.pg_attribute AS a,
                        unnest(ARRAY[{role_list}]) AS r (name),
                        unnest(ARRAY['INSERT', 'REFERENCES', 'SELECT', 'UPDATE']) AS x (priv)
                  WHERE a.attrelid = pg_catalog.to_regclass({lit(e.name)})
                    AND a.attnum > 0 AND NOT a.attisdropped
                    AND pg_catalog.has_column_privilege(r.name, a.attrelid, a.attnum, x.priv)
                    AND NOT pg_catalog.has_table_privilege(r.name, a.attrelid, x.priv)) AS s (v)
                  ORDER BY s.v COLLATE "C"),
          {text_array(expected)},
          {lit(desc)})""")

    funcs = [e for e in matrix.entries if e.kind == "function"]
    p.comment(f"Functions ({len(funcs) * len(all_roles)}): EXECUTE for each role, both ways; PUBLIC never.")
    for e in funcs:
        schema, fname, args = function_parts(e.name)
        for role in all_roles:
            g = grant_of(e, role)
            verb = "may execute" if g.privs else "may not execute"
            p.add(f"SELECT function_privs_are({lit(schema)}, {lit(fname)}, {name_array(args)},\n"
                  f"                          {lit(role)}, {name_array(g.privs)},\n"
                  f"                          {lit(f'{who(role)} {verb} {e.name}')})")

    explicit_private = private_rows(matrix)
    p.comment(f"Private helpers ({len(all_roles)}): the {PRIVATE_GROUP} row, expanded from the catalog at\n"
              "run time.")
    for role in all_roles:
        p.add(f"""SELECT is(ARRAY(SELECT s.v FROM (
                 SELECT format('%s.%s(%s)', n.nspname, p.proname, pg_catalog.oidvectortypes(p.proargtypes))
                   FROM pg_catalog.pg_proc AS p
                   JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
                  WHERE n.nspname = 'ctxgraph' AND p.proname LIKE '\\_%'
                    AND format('%s.%s(%s)', n.nspname, p.proname, pg_catalog.oidvectortypes(p.proargtypes))
                        <> ALL ({text_array(explicit_private)})
                    AND pg_catalog.has_function_privilege({lit(role)}, p.oid, 'EXECUTE')) AS s (v)
                  ORDER BY s.v COLLATE "C"),
          '{{}}'::text[],
          {lit(f'{who(role)} executes no private {PRIVATE_GROUP} function (owner only)')})""")

    known = ", ".join(lit(r) for r in [role_name(r) for r in ROLES])
    schemas_sql = ", ".join(lit(s) for s in SCHEMAS)
    p.comment("Grants to roles outside the matrix (1): no schema, relation, column or function in ctxgraph,\n"
              "stig or cve grants anything to a role other than its owner, the four roles and PUBLIC\n"
              "(PUBLIC is checked above as a role with no grants).")
    p.add(f"""SELECT is(ARRAY(SELECT s.v FROM (
                 SELECT DISTINCT format('%s to %s', o.what, pg_catalog.pg_get_userbyid(x.grantee))
                   FROM (SELECT format('schema %s', n.nspname) AS what, n.nspacl AS acl, n.nspowner AS owner
                           FROM pg_catalog.pg_namespace AS n WHERE n.nspname IN ({schemas_sql})
                         UNION ALL
                         SELECT format('%s.%s', n.nspname, c.relname), c.relacl, c.relowner
                           FROM pg_catalog.pg_class AS c
                           JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
                          WHERE n.nspname IN ({schemas_sql})
                         UNION ALL
                         SELECT format('%s.%s.%s', n.nspname, c.relname, a.attname), a.attacl, c.relowner
                           FROM pg_catalog.pg_attribute AS a
                           JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid
                           JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
                          WHERE n.nspname IN ({schemas_sql}) AND a.attacl IS NOT NULL
                         UNION ALL
                         SELECT format('%s.%s(%s)', n.nspname, p.proname,
                                       pg_catalog.oidvectortypes(p.proargtypes)), p.proacl, p.proowner
                           FROM pg_catalog.pg_proc AS p
                           JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
                          WHERE n.nspname IN ({schemas_sql})) AS o,
                        pg_catalog.aclexplode(o.acl) AS x
                  WHERE x.grantee <> 0 AND x.grantee <> o.owner
                    AND pg_catalog.pg_get_userbyid(x.grantee) <> ALL (ARRAY[{known}])) AS s (v)
                  ORDER BY s.v COLLATE "C"),
          '{{}}'::text[],
          'no object grants anything to a role outside the matrix')""")

    # ------------------------------------------------------------------------------------------
    # Real attempts.
    # ------------------------------------------------------------------------------------------
    p.comment("Real attempts with SET LOCAL ROLE: what each role's job needs works, and writes outside it\n"
              "fail with 42501. Rows are built as the superuser first (tests/fixtures/factories.sql).")
    p.raw("SELECT tests.make_tip('stig', 'V-roles-1', 'Roles: set PASS_MIN_DAYS 1 in /etc/login.defs')"
          " AS roles_tip \\gset")
    p.raw("SELECT tests.make_attempt_with_retrievals('stig', 'run-roles', 'V-roles-1', 1,\n"
          "                                          ARRAY[:roles_tip]::bigint[], true)"
          " AS roles_attempt \\gset")

    def attempt(a: Attempt) -> str:
        # format() splices the psql variables in; a statement without any is passed as it is.
        uses_vars = ":roles_" in a.sql
        body = a.sql.replace(":roles_tip", "%1$s").replace(":roles_attempt", "%2$s") if uses_vars else a.sql
        sql = f"format($${body}$$, :roles_tip, :roles_attempt)" if uses_vars else f"$${body}$$"
        if a.denied is None:
            return f"SELECT lives_ok({sql},\n                {lit(a.description)})"
        return (f"SELECT throws_ok({sql},\n"
                f"                 '42501', {lit('permission denied for ' + a.denied)},\n"
                f"                 {lit(a.description)})")

    for role, attempts in REAL_ATTEMPTS:
        if role == PROBE:
            p.raw("")
            p.raw("-- PUBLIC: the probe role gets USAGE on the schemas (as a careless GRANT would give")
            p.raw("-- every login role), so that only each object's own privileges stand in its way.")
            p.raw(f"GRANT USAGE ON SCHEMA {', '.join(SCHEMAS)} TO {PROBE};")
        p.raw("")
        p.raw(f"SET LOCAL ROLE {role};")
        if role != PROBE:
            rels = readable(matrix, role[len("ctxgraph_"):])
            p.add(f"SELECT lives_ok({read_all_block(rels)},\n"
                  f"                {lit(f'{role}: reads each of the {len(rels)} tables and views')[:-1]}"
                  " the matrix grants it SELECT on')")
        for a in attempts:
            p.add(attempt(a))
        p.raw("RESET ROLE;")

    header = f"""-- GENERATED by scripts/gen-role-tests.py from docs/role-matrix.csv; do not edit.
-- Change the matrix, run `python3 scripts/gen-role-tests.py`; scripts/check-generated.sh fails when
-- this file is stale.
--
-- Every schema, relation and function of ctxgraph, {', '.join(SKILLS)} as every ctxgraph role and as PUBLIC
-- (a fresh role with no grants holds exactly what PUBLIC holds), both ways; a completeness check
-- against the catalog; then real attempts with SET LOCAL ROLE. Needs pgTAP, the fixtures of
-- tests/fixtures/factories.sql, and a superuser (or CREATEROLE) session.
BEGIN;
SELECT plan({p.count});

CREATE ROLE {PROBE} NOLOGIN;"""
    footer = "\nSELECT * FROM finish();\nROLLBACK;\n"
    return header + "\n".join(p.parts) + "\n" + footer


def shown(path: str) -> str:
    """A path as messages name it: relative to the repository when inside it."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrix", default=str(ROOT / MATRIX_NAME),
                    help=f"the role matrix (default {MATRIX_NAME})")
    ap.add_argument("--output", default=str(ROOT / "tests/pgtap/10-role-matrix.sql"),
                    help="file to write, or - for stdout")
    ap.add_argument("--docs", default=str(ROOT / DOCS_NAME),
                    help="Markdown page whose block between the role-matrix markers is rewritten"
                         f" (default {DOCS_NAME})")
    args = ap.parse_args(argv)
    try:
        matrix = parse_matrix(Path(args.matrix).read_text(encoding="utf-8"), shown(args.matrix))
        docs = Path(args.docs)
        page = docs.read_text(encoding="utf-8")
        new_page = replace_block(page, markdown_tables(matrix), shown(args.docs))
    except (MatrixError, OSError) as err:
        print(f"gen-role-tests: {err}", file=sys.stderr)
        return 2
    sql = generate(matrix)
    if new_page != page:
        docs.write_text(new_page, encoding="utf-8")
    if args.output == "-":
        sys.stdout.write(sql)
    else:
        Path(args.output).write_text(sql, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
