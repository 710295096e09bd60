#!/usr/bin/env python3
"""Write docs/sql-api.md, the SQL API reference, from the catalog of a deployed ctxgraph database.

Everything on the page comes from pg_catalog: the public functions of schema ctxgraph (every
function whose name does not start with ``_`` and that is not a trigger function), its views and
its tables (partitioned tables included, partitions and the per-skill schemas left out), with their
signatures, comments, column types and defaults and the privileges the project's group roles hold.
The output is deterministic (objects sorted by name, no OIDs, owners, database names or times), so
scripts/check-sql-api.sh can diff a fresh run against the committed page.

The SQLSTATEs listed for a function are read from the function bodies (prosrc):

* ``RAISE EXCEPTION ... USING ERRCODE = 'name' | 'xxxxx'``, ``RAISE [EXCEPTION] condition_name``,
  ``RAISE [EXCEPTION] SQLSTATE 'xxxxx'``; a RAISE EXCEPTION that names no code raises P0001, and
  ASSERT raises P0004. Condition names map to codes through PostgreSQL 15's table (CONDITIONS below;
  a name missing there is asked of the server).
* Calls of other ctxgraph functions, by name, include those functions' SQLSTATEs, transitively.
* A function whose RAISE takes its ERRCODE from a variable (ctxgraph._raise_problem) raises what its
  callers pass it: a caller of such a function gets the known SQLSTATE literals of its own body
  ('22023') and the SQLSTATE literals of the check helpers it calls that return a column named
  sqlstate (ctxgraph._attempt_problem and the like).

This over-approximates (an overload called by name counts for all overloads, a RAISE inside a
handler that is caught in the same function still counts) and leaves out errors PostgreSQL raises by
itself (constraint violations, permission denied, lock timeouts).

    python3 scripts/gen-sql-api.py --dsn postgresql:///apidoc            # rewrite docs/sql-api.md
    python3 scripts/gen-sql-api.py --output - ...                        # print it instead

Without --dsn, libpq's variables (PGHOST, PGDATABASE, ...) choose the database. Normally run
through ``make docs`` (scripts/gen-sql-api.sh), which deploys a throwaway database first.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = "ctxgraph"
# The project's group roles, in the order the page lists them; ctxgraph.group_roles, when the
# database has it, supplies their current names (a renamed role is renamed there).
ROLE_KINDS = ("writer", "scorer", "ranker", "analyst")
DEFAULT_ROLES = tuple(f"ctxgraph_{kind}" for kind in ROLE_KINDS)
PUBLIC = "PUBLIC"
PRIVILEGE_ORDER = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER",
                   "MAINTAIN", "EXECUTE", "USAGE", "CREATE")
VOLATILITY = {"i": "IMMUTABLE", "s": "STABLE", "v": "VOLATILE"}
PARALLEL = {"s": "PARALLEL SAFE", "r": "PARALLEL RESTRICTED", "u": "PARALLEL UNSAFE"}
KINDS = {"f": "function", "p": "procedure", "a": "aggregate", "w": "window function"}

# PostgreSQL 15's error conditions (src/backend/utils/errcodes.txt, errors only; where a name is
# given to two codes, PL/pgSQL takes the first, which is the one kept here).
CONDITIONS_TEXT = """
03000 sql_statement_not_yet_complete
08000 connection_exception
08003 connection_does_not_exist
08006 connection_failure
08001 sqlclient_unable_to_establish_sqlconnection
08004 sqlserver_rejected_establishment_of_sqlconnection
08007 transaction_resolution_unknown
08P01 protocol_violation
09000 triggered_action_exception
0A000 feature_not_supported
0B000 invalid_transaction_initiation
0F000 locator_exception
0F001 invalid_locator_specification
0L000 invalid_grantor
0LP01 invalid_grant_operation
0P000 invalid_role_specification
0Z000 diagnostics_exception
0Z002 stacked_diagnostics_accessed_without_active_handler
20000 case_not_found
21000 cardinality_violation
22000 data_exception
2202E array_subscript_error
22021 character_not_in_repertoire
22008 datetime_field_overflow
22012 division_by_zero
22005 error_in_assignment
2200B escape_character_conflict
22022 indicator_overflow
22015 interval_field_overflow
2201E invalid_argument_for_logarithm
22014 invalid_argument_for_ntile_function
22016 invalid_argument_for_nth_value_function
2201F invalid_argument_for_power_function
2201G invalid_argument_for_width_bucket_function
22018 invalid_character_value_for_cast
22007 invalid_datetime_format
22019 invalid_escape_character
2200D invalid_escape_octet
22025 invalid_escape_sequence
22P06 nonstandard_use_of_escape_character
22010 invalid_indicator_parameter_value
22023 invalid_parameter_value
22013 invalid_preceding_or_following_size
2201B invalid_regular_expression
2201W invalid_row_count_in_limit_clause
2201X invalid_row_count_in_result_offset_clause
2202H invalid_tablesample_argument
2202G invalid_tablesample_repeat
22009 invalid_time_zone_displacement_value
2200C invalid_use_of_escape_character
2200G most_specific_type_mismatch
22004 null_value_not_allowed
22002 null_value_no_indicator_parameter
22003 numeric_value_out_of_range
2200H sequence_generator_limit_exceeded
22026 string_data_length_mismatch
22001 string_data_right_truncation
22011 substring_error
22027 trim_error
22024 unterminated_c_string
2200F zero_length_character_string
22P01 floating_point_exception
22P02 invalid_text_representation
22P03 invalid_binary_representation
22P04 bad_copy_file_format
22P05 untranslatable_character
22P07 datum_version_mismatch
2200L not_an_xml_document
2200M invalid_xml_document
2200N invalid_xml_content
2200S invalid_xml_comment
2200T invalid_xml_processing_instruction
22030 duplicate_json_object_key_value
22031 invalid_argument_for_sql_json_datetime_function
22032 invalid_json_text
22033 invalid_sql_json_subscript
22034 more_than_one_sql_json_item
22035 no_sql_json_item
22036 non_numeric_sql_json_item
22037 non_unique_keys_in_a_json_object
22038 singleton_sql_json_item_required
22039 sql_json_array_not_found
2203A sql_json_member_not_found
2203B sql_json_number_not_found
2203C sql_json_object_not_found
2203D too_many_json_array_elements
2203E too_many_json_object_members
2203F sql_json_scalar_required
2203G sql_json_item_cannot_be_cast_to_target_type
23000 integrity_constraint_violation
23001 restrict_violation
23502 not_null_violation
23503 foreign_key_violation
23505 unique_violation
23514 check_violation
23P01 exclusion_violation
24000 invalid_cursor_state
25000 invalid_transaction_state
25001 active_sql_transaction
25002 branch_transaction_already_active
25008 held_cursor_requires_same_isolation_level
25003 inappropriate_access_mode_for_branch_transaction
25004 inappropriate_isolation_level_for_branch_transaction
25005 no_active_sql_transaction_for_branch_transaction
25006 read_only_sql_transaction
25007 schema_and_data_statement_mixing_not_supported
25P01 no_active_sql_transaction
25P02 in_failed_sql_transaction
25P03 idle_in_transaction_session_timeout
26000 invalid_sql_statement_name
27000 triggered_data_change_violation
28000 invalid_authorization_specification
28P01 invalid_password
2B000 dependent_privilege_descriptors_still_exist
2BP01 dependent_objects_still_exist
2D000 invalid_transaction_termination
2F000 sql_routine_exception
2F005 function_executed_no_return_statement
2F002 modifying_sql_data_not_permitted
2F003 prohibited_sql_statement_attempted
2F004 reading_sql_data_not_permitted
34000 invalid_cursor_name
38000 external_routine_exception
38001 containing_sql_not_permitted
39000 external_routine_invocation_exception
39001 invalid_sqlstate_returned
39P01 trigger_protocol_violated
39P02 srf_protocol_violated
39P03 event_trigger_protocol_violated
3B000 savepoint_exception
3B001 invalid_savepoint_specification
3D000 invalid_catalog_name
3F000 invalid_schema_name
40000 transaction_rollback
40002 transaction_integrity_constraint_violation
40001 serialization_failure
40003 statement_completion_unknown
40P01 deadlock_detected
42000 syntax_error_or_access_rule_violation
42601 syntax_error
42501 insufficient_privilege
42846 cannot_coerce
42803 grouping_error
42P20 windowing_error
42P19 invalid_recursion
42830 invalid_foreign_key
42602 invalid_name
42622 name_too_long
42939 reserved_name
42804 datatype_mismatch
42P18 indeterminate_datatype
42P21 collation_mismatch
42P22 indeterminate_collation
42809 wrong_object_type
428C9 generated_always
42703 undefined_column
42883 undefined_function
42P01 undefined_table
42P02 undefined_parameter
42704 undefined_object
42701 duplicate_column
42P03 duplicate_cursor
42P04 duplicate_database
42723 duplicate_function
42P05 duplicate_prepared_statement
42P06 duplicate_schema
42P07 duplicate_table
42712 duplicate_alias
42710 duplicate_object
42702 ambiguous_column
42725 ambiguous_function
42P08 ambiguous_parameter
42P09 ambiguous_alias
42P10 invalid_column_reference
42611 invalid_column_definition
42P11 invalid_cursor_definition
42P12 invalid_database_definition
42P13 invalid_function_definition
42P14 invalid_prepared_statement_definition
42P15 invalid_schema_definition
42P16 invalid_table_definition
42P17 invalid_object_definition
44000 with_check_option_violation
53000 insufficient_resources
53100 disk_full
53200 out_of_memory
53300 too_many_connections
53400 configuration_limit_exceeded
54000 program_limit_exceeded
54001 statement_too_complex
54011 too_many_columns
54023 too_many_arguments
55000 object_not_in_prerequisite_state
55006 object_in_use
55P02 cant_change_runtime_param
55P03 lock_not_available
55P04 unsafe_new_enum_value_usage
57000 operator_intervention
57014 query_canceled
57P01 admin_shutdown
57P02 crash_shutdown
57P03 cannot_connect_now
57P04 database_dropped
57P05 idle_session_timeout
58000 system_error
58030 io_error
58P01 undefined_file
58P02 duplicate_file
72000 snapshot_too_old
F0000 config_file_error
F0001 lock_file_exists
HV000 fdw_error
HV005 fdw_column_name_not_found
HV002 fdw_dynamic_parameter_value_needed
HV010 fdw_function_sequence_error
HV021 fdw_inconsistent_descriptor_information
HV024 fdw_invalid_attribute_value
HV007 fdw_invalid_column_name
HV008 fdw_invalid_column_number
HV004 fdw_invalid_data_type
HV006 fdw_invalid_data_type_descriptors
HV091 fdw_invalid_descriptor_field_identifier
HV00B fdw_invalid_handle
HV00C fdw_invalid_option_index
HV00D fdw_invalid_option_name
HV090 fdw_invalid_string_length_or_buffer_length
HV00A fdw_invalid_string_format
HV009 fdw_invalid_use_of_null_pointer
HV014 fdw_too_many_handles
HV001 fdw_out_of_memory
HV00P fdw_no_schemas
HV00J fdw_option_name_not_found
HV00K fdw_reply_handle
HV00Q fdw_schema_not_found
HV00R fdw_table_not_found
HV00L fdw_unable_to_create_execution
HV00M fdw_unable_to_create_reply
HV00N fdw_unable_to_establish_connection
P0000 plpgsql_error
P0001 raise_exception
P0002 no_data_found
P0003 too_many_rows
P0004 assert_failure
XX000 internal_error
XX001 data_corrupted
XX002 index_corrupted
"""
CONDITIONS: dict[str, str] = {}
for _line in CONDITIONS_TEXT.split("\n"):
    if _line.strip():
        _code, _name = _line.split()
        CONDITIONS.setdefault(_name, _code)
CODE_NAMES: dict[str, str] = {}
for _name, _code in CONDITIONS.items():
    CODE_NAMES.setdefault(_code, _name)
SQLSTATE_RE = re.compile(r"^[0-9A-Z]{5}$")
# Classes that are no error: a literal of these is not an SQLSTATE a function raises.
NON_ERROR_CLASSES = ("00", "01", "02")
RAISE_LEVELS = {"debug", "log", "info", "notice", "warning", "exception"}
STATEMENT_START = {";", "begin", "then", "else", "loop"}


class GenError(Exception):
    """The catalog cannot be documented; the message says why."""


# --- reading function bodies ------------------------------------------------------------------


@dataclass(frozen=True)
class Token:
    kind: str  # word, qword (quoted identifier), str, num, punct
    text: str  # words lower-cased; strings and quoted identifiers as written (quotes undone)


DOLLAR_RE = re.compile(r"\$([A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$")
WORD_RE = re.compile(r"[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*")
NUM_RE = re.compile(r"[0-9][0-9.eE]*|\.[0-9]+")


def tokenize(src: str) -> list[Token]:
    """Tokens of SQL or PL/pgSQL text, comments dropped, string constants kept as one token each."""
    out: list[Token] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c.isspace():
            i += 1
        elif src.startswith("--", i):
            j = src.find("\n", i)
            i = n if j < 0 else j + 1
        elif src.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif src.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "'":
            text, i = _quoted(src, i, "'", backslash=False)
            out.append(Token("str", text))
        elif c == '"':
            text, i = _quoted(src, i, '"', backslash=False)
            out.append(Token("qword", text))
        elif c == "$":
            m = DOLLAR_RE.match(src, i)
            if m:
                end = src.find(m.group(0), m.end())
                end = n if end < 0 else end
                out.append(Token("str", src[m.end():end]))
                i = min(n, end + len(m.group(0)))
            else:  # $1, a positional parameter
                j = i + 1
                while j < n and src[j].isdigit():
                    j += 1
                out.append(Token("punct", src[i:j]))
                i = j
        elif WORD_RE.match(src, i):
            m = WORD_RE.match(src, i)
            word = m.group(0)
            i = m.end()
            if word.lower() in ("e", "b", "x", "n") and i < n and src[i] == "'":
                text, i = _quoted(src, i, "'", backslash=word.lower() == "e")
                out.append(Token("str", text))
            else:
                out.append(Token("word", word.lower()))
        elif NUM_RE.match(src, i):
            m = NUM_RE.match(src, i)
            out.append(Token("num", m.group(0)))
            i = m.end()
        elif src.startswith(":=", i) or src.startswith("::", i):
            out.append(Token("punct", src[i:i + 2]))
            i += 2
        else:
            out.append(Token("punct", c))
            i += 1
    return out


def _quoted(src: str, i: int, quote: str, backslash: bool) -> tuple[str, int]:
    """The text of the quoted constant or identifier starting at src[i], and the index after it."""
    parts: list[str] = []
    j, n = i + 1, len(src)
    while j < n:
        c = src[j]
        if backslash and c == "\\" and j + 1 < n:
            parts.append(src[j + 1])
            j += 2
        elif c == quote:
            if j + 1 < n and src[j + 1] == quote:
                parts.append(quote)
                j += 2
            else:
                return "".join(parts), j + 1
        else:
            parts.append(c)
            j += 1
    return "".join(parts), n


@dataclass
class BodyFacts:
    """What one function body says about errors, before following its calls."""

    raises: set[str] = field(default_factory=set)  # SQLSTATEs its own RAISE/ASSERT statements raise
    dynamic: bool = False  # a RAISE takes its ERRCODE from an expression, not a constant
    literals: set[str] = field(default_factory=set)  # string constants that are error SQLSTATEs
    calls: set[str] = field(default_factory=set)  # names of ctxgraph functions it calls


def body_facts(src: str, language: str, functions: set[str], resolve) -> BodyFacts:
    tokens = tokenize(src or "")
    facts = BodyFacts()
    for k, tok in enumerate(tokens):
        prev = tokens[k - 1] if k else Token("punct", ";")
        if tok.kind == "str" and SQLSTATE_RE.match(tok.text) and tok.text in CODE_NAMES \
                and not tok.text.startswith(NON_ERROR_CLASSES):
            facts.literals.add(tok.text)
        if tok.kind not in ("word", "qword"):
            continue
        nxt = tokens[k + 1] if k + 1 < len(tokens) else None
        # A call: name( or ctxgraph.name(, not some_other_qualifier.name(.
        if tok.text in functions and nxt is not None and nxt == Token("punct", "("):
            qualified = prev == Token("punct", ".")
            if not qualified or (k >= 2 and tokens[k - 2].kind in ("word", "qword")
                                 and tokens[k - 2].text == SCHEMA):
                facts.calls.add(tok.text)
        if language != "plpgsql" or tok.kind != "word" or prev == Token("punct", "."):
            continue
        if tok.text == "assert" and prev.kind in ("word", "punct") and prev.text in STATEMENT_START:
            facts.raises.add("P0004")
        elif tok.text == "raise":
            end = k + 1
            while end < len(tokens) and tokens[end] != Token("punct", ";"):
                end += 1
            _raise_statement(tokens[k + 1:end], facts, resolve)
    return facts


def _raise_statement(stmt: list[Token], facts: BodyFacts, resolve) -> None:
    level = "exception"
    if stmt and stmt[0].kind == "word" and stmt[0].text in RAISE_LEVELS:
        level, stmt = stmt[0].text, stmt[1:]
    if level != "exception" or not stmt:
        return  # a notice or warning, or RAISE; re-raising the error being handled
    code = None
    head = stmt[0]
    if head.kind == "word" and head.text == "sqlstate" and len(stmt) > 1 and stmt[1].kind == "str":
        code = resolve(stmt[1].text)
    elif head.kind == "word" and head.text != "using":
        code = resolve(head.text)
    using = next((j for j, t in enumerate(stmt) if t == Token("word", "using")), None)
    if using is not None:
        opts = stmt[using + 1:]
        for j, t in enumerate(opts[:-2]):
            if t == Token("word", "errcode") and opts[j + 1].text in ("=", ":="):
                value = opts[j + 2]
                if value.kind == "str":
                    code = resolve(value.text)
                else:
                    facts.dynamic = True
                    return
    facts.raises.add(code or "P0001")


def raised_sqlstates(facts: dict[str, BodyFacts], problem_returners: set[str]) -> dict[str, set[str]]:
    """SQLSTATEs each function name can raise, its own and those of what it calls, transitively."""
    problems: dict[str, set[str]] = {name: set() for name in facts}
    changed = True
    while changed:
        changed = False
        for name, f in facts.items():
            if name not in problem_returners:
                continue
            new = set(f.literals)
            for callee in f.calls:
                if callee in problem_returners:
                    new |= problems[callee]
            if not new <= problems[name]:
                problems[name] |= new
                changed = True
    raised: dict[str, set[str]] = {name: set(f.raises) for name, f in facts.items()}
    changed = True
    while changed:
        changed = False
        for name, f in facts.items():
            new = set()
            for callee in f.calls:
                new |= raised[callee]
            if any(facts[callee].dynamic for callee in f.calls):
                new |= f.literals
                for callee in f.calls:
                    new |= problems[callee]
            if not new <= raised[name]:
                raised[name] |= new
                changed = True
    return raised


# --- reading the catalog ----------------------------------------------------------------------


SESSION_SETTINGS = (
    # Qualify every name outside pg_catalog, and print constants the same way on every server.
    "SET search_path = pg_catalog",
    "SET TimeZone = 'UTC'",
    "SET DateStyle = 'ISO, MDY'",
    "SET IntervalStyle = 'postgres'",
    "SET extra_float_digits = 1",
)

ROLES_SQL = """
SELECT g.kind, g.role_name::text
  FROM ctxgraph.group_roles AS g
"""

SCHEMA_ACL_SQL = """
SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE r.rolname::text END, a.privilege_type, a.is_grantable
  FROM pg_namespace AS n
 CROSS JOIN LATERAL aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) AS a
  LEFT JOIN pg_roles AS r ON r.oid = a.grantee
 WHERE n.nspname = %(schema)s
"""

FUNCTIONS_SQL = """
SELECT p.oid, p.proname::text, p.prokind::text, oidvectortypes(p.proargtypes),
       pg_get_function_arguments(p.oid), pg_get_function_result(p.oid), l.lanname::text,
       p.provolatile::text, p.proparallel::text, p.prosecdef, p.proisstrict, p.proleakproof,
       p.proconfig, obj_description(p.oid, 'pg_proc'),
       CASE WHEN p.prosqlbody IS NOT NULL THEN pg_get_function_sqlbody(p.oid) ELSE p.prosrc END,
       p.prorettype IN ('pg_catalog.trigger'::regtype, 'pg_catalog.event_trigger'::regtype),
       coalesce(EXISTS (SELECT 1 FROM unnest(p.proargnames, p.proargmodes) AS x (name, mode)
                         WHERE x.name = 'sqlstate' AND x.mode IN ('o', 't', 'b')), false)
  FROM pg_proc AS p
  JOIN pg_language AS l ON l.oid = p.prolang
 WHERE p.pronamespace = %(schema)s::regnamespace
   AND NOT EXISTS (SELECT 1 FROM pg_depend AS d
                    WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
"""

FUNCTION_ACL_SQL = """
SELECT p.oid, CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE r.rolname::text END, a.privilege_type, a.is_grantable
  FROM pg_proc AS p
 CROSS JOIN LATERAL aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) AS a
  LEFT JOIN pg_roles AS r ON r.oid = a.grantee
 WHERE p.pronamespace = %(schema)s::regnamespace
"""

RELATIONS_SQL = """
SELECT c.oid, c.relname::text, c.relkind::text, obj_description(c.oid, 'pg_class'),
       CASE WHEN c.relkind = 'p' THEN pg_get_partkeydef(c.oid) END,
       (SELECT pg_get_constraintdef(k.oid) FROM pg_constraint AS k
         WHERE k.conrelid = c.oid AND k.contype = 'p'),
       c.relkind IN ('v', 'm') AND coalesce(c.reloptions::text[] @> ARRAY['security_barrier=true'], false)
  FROM pg_class AS c
 WHERE c.relnamespace = %(schema)s::regnamespace
   AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
   AND NOT c.relispartition
   AND NOT EXISTS (SELECT 1 FROM pg_depend AS d
                    WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
"""

COLUMNS_SQL = """
SELECT a.attrelid, a.attnum, a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull,
       pg_get_expr(d.adbin, d.adrelid), a.attidentity::text, a.attgenerated::text,
       col_description(a.attrelid, a.attnum)
  FROM pg_attribute AS a
  JOIN pg_class AS c ON c.oid = a.attrelid
  LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE c.relnamespace = %(schema)s::regnamespace
   AND a.attnum > 0 AND NOT a.attisdropped
"""

RELATION_ACL_SQL = """
SELECT c.oid, 0, CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE r.rolname::text END, a.privilege_type,
       a.is_grantable
  FROM pg_class AS c
 CROSS JOIN LATERAL aclexplode(coalesce(c.relacl, acldefault('r', c.relowner))) AS a
  LEFT JOIN pg_roles AS r ON r.oid = a.grantee
 WHERE c.relnamespace = %(schema)s::regnamespace
UNION ALL
SELECT c.oid, att.attnum, CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE r.rolname::text END, a.privilege_type,
       a.is_grantable
  FROM pg_class AS c
  JOIN pg_attribute AS att ON att.attrelid = c.oid AND att.attnum > 0 AND NOT att.attisdropped
 CROSS JOIN LATERAL aclexplode(att.attacl) AS a
  LEFT JOIN pg_roles AS r ON r.oid = a.grantee
 WHERE c.relnamespace = %(schema)s::regnamespace
"""


@dataclass
class Function:
    name: str
    kind: str
    arg_types: str
    arguments: str
    result: str
    language: str
    volatility: str
    parallel: str
    security_definer: bool
    strict: bool
    leakproof: bool
    config: list[str]
    comment: str | None
    source: str
    is_trigger: bool
    returns_sqlstate: bool
    grants: list[tuple[str, str, bool]] = field(default_factory=list)


@dataclass
class Column:
    number: int
    name: str
    type: str
    not_null: bool
    default: str | None
    identity: str
    generated: str
    comment: str | None


@dataclass
class Relation:
    name: str
    kind: str
    comment: str | None
    partition_key: str | None
    primary_key: str | None
    security_barrier: bool
    columns: list[Column] = field(default_factory=list)
    grants: list[tuple[int, str, str, bool]] = field(default_factory=list)


@dataclass
class Catalog:
    roles: list[str]
    schema_grants: list[tuple[str, str, bool]]
    functions: list[Function]
    relations: list[Relation]
    sqlstates: dict[str, set[str]]
    dynamic: set[str]


def read_catalog(conn) -> Catalog:
    params = {"schema": SCHEMA}
    with conn.cursor() as cur:
        for setting in SESSION_SETTINGS:
            cur.execute(setting)
        cur.execute("SELECT to_regnamespace(%(schema)s) IS NOT NULL", params)
        if not cur.fetchone()[0]:
            raise GenError(f"schema {SCHEMA} does not exist in this database: deploy first (sqitch deploy)")
        roles = list(DEFAULT_ROLES)
        cur.execute("SELECT to_regclass('ctxgraph.group_roles') IS NOT NULL")
        if cur.fetchone()[0]:
            cur.execute(ROLES_SQL)
            by_kind = dict(cur.fetchall())
            roles = [by_kind.get(kind, default)
                     for kind, default in zip(ROLE_KINDS, DEFAULT_ROLES, strict=True)]
            roles += sorted(name for kind, name in by_kind.items() if kind not in ROLE_KINDS)

        cur.execute(SCHEMA_ACL_SQL, params)
        schema_grants = cur.fetchall()

        cur.execute(FUNCTIONS_SQL, params)
        by_oid: dict[int, Function] = {}
        for row in cur.fetchall():
            by_oid[row[0]] = Function(*row[1:12], list(row[12] or []), row[13], row[14] or "", row[15],
                                      row[16])
        cur.execute(FUNCTION_ACL_SQL, params)
        for oid, grantee, privilege, grantable in cur.fetchall():
            if oid in by_oid:
                by_oid[oid].grants.append((grantee, privilege, grantable))
        functions = list(by_oid.values())

        cur.execute(RELATIONS_SQL, params)
        rels: dict[int, Relation] = {row[0]: Relation(*row[1:]) for row in cur.fetchall()}
        cur.execute(COLUMNS_SQL, params)
        for oid, *col in cur.fetchall():
            if oid in rels:
                rels[oid].columns.append(Column(*col))
        cur.execute(RELATION_ACL_SQL, params)
        for oid, attnum, grantee, privilege, grantable in cur.fetchall():
            if oid in rels:
                rels[oid].grants.append((attnum, grantee, privilege, grantable))
        for rel in rels.values():
            rel.columns.sort(key=lambda c: c.number)

        # Condition names missing from CONDITIONS are asked of the server, which knows its own.
        unknown: dict[str, str | None] = {}

        def resolve(value: str) -> str:
            if SQLSTATE_RE.match(value):
                return value
            name = value.lower()
            if name in CONDITIONS:
                return CONDITIONS[name]
            if name not in unknown:
                unknown[name] = server_condition(conn, name)
            if unknown[name] is None:
                raise GenError(f"unknown condition name {value!r} in a RAISE of schema {SCHEMA}")
            return unknown[name]

        names = {f.name for f in functions}
        facts: dict[str, BodyFacts] = {}
        for f in sorted(functions, key=lambda f: (f.name, f.arg_types)):
            fb = body_facts(f.source, f.language, names, resolve)
            merged = facts.setdefault(f.name, BodyFacts())
            merged.raises |= fb.raises
            merged.dynamic |= fb.dynamic
            merged.literals |= fb.literals
            merged.calls |= fb.calls
        returners = {f.name for f in functions if f.returns_sqlstate}
        sqlstates = raised_sqlstates(facts, returners)
        dynamic = {name for name, fb in facts.items() if fb.dynamic}

    return Catalog(roles, schema_grants, functions, list(rels.values()), sqlstates, dynamic)


def server_condition(conn, name: str) -> str | None:
    """The SQLSTATE the server gives condition name (None when it knows no such condition)."""
    import psycopg

    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name) or name == "others":
        return None
    try:  # PL/pgSQL checks a handler's condition name when it compiles the block.
        with conn.transaction(), conn.cursor() as cur:
            cur.execute(f"DO $gen$ BEGIN NULL; EXCEPTION WHEN {name} THEN NULL; END $gen$")
    except psycopg.Error:
        return None
    try:
        with conn.transaction(), conn.cursor() as cur:
            cur.execute(f"DO $gen$ BEGIN RAISE EXCEPTION USING ERRCODE = '{name}'; END $gen$")
    except psycopg.Error as exc:
        return exc.sqlstate
    return None


# --- writing Markdown -------------------------------------------------------------------------


def escape(text: str) -> str:
    """Comment text as Markdown that renders as written (no HTML tags, emphasis or list markers)."""
    text = text.replace("\\", "\\\\")
    text = re.sub(r"([`*])", r"\\\1", text)
    # < starts an HTML tag or autolink only before a letter, /, ! or ?.
    text = re.sub(r"<(?=[A-Za-z/!?])", r"\\<", text)
    # Brackets make a link only when a bracket pair is followed by (, [ or :.
    text = re.sub(r"\](?=[(\[:])", r"\\]", text)
    # An underscore between two letters or digits never starts emphasis; others might.
    text = re.sub(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", r"\\_", text)
    lines = []
    for line in text.split("\n"):
        line = line.rstrip()
        if re.match(r"\s*([#=+>|-]|\d+[.)])", line):
            line = "\\" + line.lstrip()
        lines.append(line)
    return "\n".join(lines)


def inline(text: str) -> str:
    """Comment text for a list item: one line."""
    return " ".join(escape(text).split())


def code(text: str) -> str:
    ticks = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def paragraph(comment: str | None) -> str:
    if not comment or not comment.strip():
        return "_No comment._"
    return re.sub(r"\n{3,}", "\n\n", escape(comment.strip()))


class Anchors:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens, repeats numbered."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def add(self, heading: str) -> str:
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = self.seen.get(slug, 0)
        self.seen[slug] = count + 1
        return slug if count == 0 else f"{slug}-{count}"


def privilege_key(privilege: str) -> tuple[int, str]:
    rank = PRIVILEGE_ORDER.index(privilege) if privilege in PRIVILEGE_ORDER else len(PRIVILEGE_ORDER)
    return (rank, privilege)


def grantee_key(roles: list[str]):
    order = roles + [PUBLIC]
    return lambda grantee: order.index(grantee)


def grant_text(privilege: str, grantable: bool) -> str:
    return privilege + (" WITH GRANT OPTION" if grantable else "")


def function_grantees(f: Function, roles: list[str]) -> str:
    shown = roles + [PUBLIC]
    grantees = sorted({(g, grantable) for g, p, grantable in f.grants if p == "EXECUTE" and g in shown},
                      key=lambda x: grantee_key(roles)(x[0]))
    if not grantees:
        return "none of the project's roles (owner and superusers only)"
    return ", ".join(code(g) + (" (WITH GRANT OPTION)" if grantable else "") for g, grantable in grantees)


def relation_grants(rel: Relation, roles: list[str]) -> list[str]:
    shown = roles + [PUBLIC]
    names = {c.number: c.name for c in rel.columns}
    lines = []
    for grantee in sorted({g for _, g, _, _ in rel.grants if g in shown}, key=grantee_key(roles)):
        table_level = sorted({(p, gr) for n, g, p, gr in rel.grants if g == grantee and n == 0},
                             key=lambda x: privilege_key(x[0]))
        parts = [grant_text(p, gr) for p, gr in table_level]
        column_level: dict[tuple[str, bool], list[int]] = defaultdict(list)
        for n, g, p, gr in rel.grants:
            if g == grantee and n != 0 and (p, gr) not in table_level:
                column_level[(p, gr)].append(n)
        for (p, gr), numbers in sorted(column_level.items(),
                                       key=lambda x: privilege_key(x[0][0]) + (x[0][1],)):
            columns = ", ".join(names[n] for n in sorted(set(numbers)))
            parts.append(f"{grant_text(p, gr)} ({columns})")
        lines.append(f"- {code(grantee)}: " + "; ".join(parts))
    return lines or ["- none of the project's roles (owner and superusers only)"]


def format_sqlstates(codes: set[str]) -> str:
    if not codes:
        return "none raised explicitly"
    return ", ".join(f"{code(c)} {CODE_NAMES.get(c, '')}".rstrip() for c in sorted(codes))


def render(cat: Catalog, command: str) -> str:
    anchors = Anchors()
    roles = cat.roles
    public_functions = sorted(
        (f for f in cat.functions if not f.name.startswith("_") and not f.is_trigger),
        key=lambda f: (f.name, f.arg_types))
    overloaded = {f.name for f in public_functions if sum(g.name == f.name for g in public_functions) > 1}
    views = sorted((r for r in cat.relations if r.kind in ("v", "m")), key=lambda r: r.name)
    tables = sorted((r for r in cat.relations if r.kind in ("r", "p", "f")), key=lambda r: r.name)

    def fheading(f: Function) -> str:
        name = f"{SCHEMA}.{f.name}"
        return f"{name}({f.arg_types})" if f.name in overloaded else name

    out: list[str] = []
    title = "SQL API reference"
    anchors.add(title)
    out += [
        f"# {title}",
        "",
        (f"<!-- Generated from the catalog of a fresh deploy by scripts/gen-sql-api.py; do not edit. "
         f"Regenerate with: {command} -->"),
        "",
        (f"Generated from the PostgreSQL catalog of a freshly deployed database by `scripts/gen-sql-api.py`; "
         f"do not edit by hand. After a change to the deploy scripts, regenerate it with `{command}` "
         f"(`scripts/check-sql-api.sh`, run by `make test`, fails while it is stale)."),
        "",
        (f"It covers schema `{SCHEMA}`: its functions (the private `_`-prefixed helpers and trigger "
         f"functions left out), views and tables. Each skill's schema (`ctxgraph.add_skill`) holds "
         f"that skill's partitions of the partitioned tables and views of the same names over the "
         f"`{SCHEMA}` ones."),
        "",
        ("- **Grants** are the privileges granted directly to the project's group roles "
         f"({', '.join(code(r) for r in roles)}) and to `PUBLIC`; the owner and superusers hold every "
         "privilege."),
        ("- **SQLSTATEs** are the error codes a function raises itself or through the ctxgraph functions "
         "it calls, read from their bodies; errors PostgreSQL raises on its own (constraint violations, "
         "permission denied, lock and statement timeouts) are not listed."),
    ]
    usage = sorted({(g, p, gr) for g, p, gr in cat.schema_grants if g in roles + [PUBLIC]},
                   key=lambda x: (grantee_key(roles)(x[0]), privilege_key(x[1])))
    if usage:
        per_role: dict[str, list[str]] = defaultdict(list)
        for g, p, gr in usage:
            per_role[g].append(grant_text(p, gr))
        held = "; ".join(f"{code(g)} {', '.join(ps)}" for g, ps in per_role.items())
        out.append(f"- **Schema `{SCHEMA}`**: {held}.")
    out.append("")

    sections = [("Functions", public_functions, fheading),
                ("Views", views, lambda r: f"{SCHEMA}.{r.name}"),
                ("Tables", tables, lambda r: f"{SCHEMA}.{r.name}")]
    # Anchors are handed out in page order: the contents come first but need the headings' anchors.
    planned = Anchors()
    planned.add(title)
    contents = ["## Contents", ""]
    planned.add("Contents")
    for section, items, heading in sections:
        planned.add(section)
        links = [f"[{heading(x).removeprefix(SCHEMA + '.')}](#{planned.add(heading(x))})" for x in items]
        contents.append(f"- **{section}** ({len(items)}): " + (", ".join(links) if links else "none"))
    out += contents + [""]
    anchors.add("Contents")

    out += ["## Functions", ""]
    anchors.add("Functions")
    for f in public_functions:
        anchors.add(fheading(f))
        out += [f"### {fheading(f)}", "", paragraph(f.comment), "", "```sql"]
        out.append(f"{SCHEMA}.{f.name}({f.arguments})")
        if f.kind != "p":
            out.append(f"RETURNS {f.result}")
        out += ["```", ""]
        traits = [f.language, VOLATILITY.get(f.volatility, f.volatility)]
        if f.strict:
            traits.append("STRICT")
        if f.leakproof:
            traits.append("LEAKPROOF")
        if f.parallel != "u":
            traits.append(PARALLEL.get(f.parallel, f.parallel))
        traits.append("**SECURITY DEFINER**" if f.security_definer else "SECURITY INVOKER")
        kind = "" if f.kind == "f" else f" ({KINDS.get(f.kind, f.kind)})"
        out.append(f"- Language{kind}: " + ", ".join(traits))
        if f.config:
            out.append("- Settings: " + ", ".join(code(s) for s in f.config))
        out.append("- EXECUTE: " + function_grantees(f, roles))
        states = format_sqlstates(cat.sqlstates.get(f.name, set()))
        if f.name in cat.dynamic:
            states += "; and SQLSTATEs computed at run time"
        out.append("- SQLSTATEs: " + states)
        out.append("")

    out += ["## Views", ""]
    anchors.add("Views")
    for rel in views:
        anchors.add(f"{SCHEMA}.{rel.name}")
        out += [f"### {SCHEMA}.{rel.name}", "", paragraph(rel.comment), ""]
        if rel.kind == "m":
            out += ["Materialized view.", ""]
        if rel.security_barrier:
            out += ["Security-barrier view.", ""]
        out += ["Grants:", ""] + relation_grants(rel, roles) + ["", "Columns:", ""]
        for c in rel.columns:
            line = f"- `{c.name}` {code(c.type)}"
            if c.comment:
                line += " — " + inline(c.comment)
            out.append(line)
        out.append("")

    out += ["## Tables", ""]
    anchors.add("Tables")
    for rel in tables:
        anchors.add(f"{SCHEMA}.{rel.name}")
        out += [f"### {SCHEMA}.{rel.name}", "", paragraph(rel.comment), ""]
        facts = []
        if rel.kind == "p":
            facts.append(f"Partitioned by {code(rel.partition_key or '')}.")
        if rel.kind == "f":
            facts.append("Foreign table.")
        if rel.primary_key:
            facts.append(f"Primary key: {code(rel.primary_key.removeprefix('PRIMARY KEY '))}.")
        if facts:
            out += [" ".join(facts), ""]
        out += ["Grants:", ""] + relation_grants(rel, roles) + ["", "Columns:", ""]
        for c in rel.columns:
            line = f"- `{c.name}` {code(c.type)}"
            attrs = []
            if c.not_null:
                attrs.append("not null")
            if c.identity:
                how = "always" if c.identity == "a" else "by default"
                attrs.append(f"generated {how} as identity")
            elif c.generated:
                attrs.append(f"generated always as {code('(' + (c.default or '') + ')')} stored")
            elif c.default is not None:
                attrs.append(f"default {code(c.default)}")
            if attrs:
                line += ", " + ", ".join(attrs)
            if c.comment:
                line += " — " + inline(c.comment)
            out.append(line)
        out.append("")

    while out and out[-1] == "":
        out.pop()
    return "\n".join(line.rstrip() for line in out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", default="", help="libpq connection string or URL (default: the PG* variables)")
    ap.add_argument("--output", default=str(ROOT / "docs" / "sql-api.md"),
                    help="file to write, or - for stdout (default: docs/sql-api.md)")
    ap.add_argument("--command", default="make docs", help="the command the page names for regenerating it")
    args = ap.parse_args(argv)
    try:
        import psycopg
    except ImportError:
        print("gen-sql-api: psycopg is missing; run with .venv/bin/python (make provision-python)",
              file=sys.stderr)
        return 2
    try:
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            catalog = read_catalog(conn)
    except (psycopg.Error, GenError) as exc:
        print(f"gen-sql-api: {exc}", file=sys.stderr)
        return 2
    text = render(catalog, args.command)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
