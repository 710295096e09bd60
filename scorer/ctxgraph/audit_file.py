"""The analysts' audit files as ctxgraph reads them: a psql script into parameterised statements.

:func:`parse_audit_file` turns one ``sql/audit`` file and its psql variables into the statements
psql would run (:class:`AuditStatement`, its variables as bound parameters), or raises
:class:`AuditFileError`. It reads text only: :func:`ctxgraph.audit_store.run_audit_file` runs them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["AuditFileError", "AuditStatement", "parse_audit_file"]

# sql/audit/*.sql are psql scripts. ctxgraph audit runs the same files through this small subset of psql:
#   \if :{?name} / \else / \endif   (is a variable set?), \set name value (defaults), other
#   backslash commands ignored (\echo, \pset); "-- section: key" names the next statement's result;
#   :'name' (psql's quoted interpolation) becomes a bound parameter, never pasted text.
# Anything else psql would interpolate (:name, :"name") or an \if on another condition is refused, so
# a file that psql and ctxgraph would read differently fails loudly instead of running half.

_META = re.compile(r"^\s*\\([A-Za-z]+)\s*(.*?)\s*$")
_IF_SET = re.compile(r"^:\{\?([A-Za-z_][A-Za-z0-9_]*)\}$")
_SET = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\s+(.*))?$")
_QUOTED_VAR = re.compile(r"(?<![:\w]):'([A-Za-z_][A-Za-z0-9_]*)'")
_OTHER_VAR = re.compile(r"(?<![:\w]):(?:\"[^\"]*\"|[A-Za-z_][A-Za-z0-9_]*|\{)")
_SECTION = re.compile(r"^\s*--\s*section:\s*([a-z_]+)\s*$")


class AuditFileError(ValueError):
    """An audit file uses psql features ctxgraph does not reproduce, or a variable it needs is unset."""


@dataclass(frozen=True)
class AuditStatement:
    key: str
    query: str  # with %(name)s placeholders
    params: dict[str, str]


def _psql_value(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    return text


def parse_audit_file(name: str, text: str, variables: Mapping[str, str]) -> list[AuditStatement]:
    """Translate one psql audit file into parameterised statements, as psql would run them."""
    values = dict(variables)
    branches: list[bool] = []  # one entry per open \if: is this branch active?
    taken: list[bool] = []
    statements: list[AuditStatement] = []
    key: str | None = None
    buffer: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        where = f"{name}:{number}"
        meta = _META.match(line)
        if meta:
            command, argument = meta.group(1), meta.group(2)
            if command == "if":
                condition = _IF_SET.match(argument)
                if condition is None:
                    raise AuditFileError(f"{where}: only \\if :{{?name}} is supported, not {argument!r}")
                outer = all(branches)
                branches.append(outer and condition.group(1) in values)
                taken.append(branches[-1])
            elif command == "else":
                if not branches:
                    raise AuditFileError(f"{where}: \\else without \\if")
                outer = all(branches[:-1])
                branches[-1] = outer and not taken[-1]
            elif command == "endif":
                if not branches:
                    raise AuditFileError(f"{where}: \\endif without \\if")
                branches.pop()
                taken.pop()
            elif command == "set" and all(branches):
                assignment = _SET.match(argument)
                if assignment is None:
                    raise AuditFileError(f"{where}: cannot read \\set {argument!r}")
                values[assignment.group(1)] = _psql_value(assignment.group(2) or "")
            continue  # \echo, \pset, \qecho ...: presentation for psql only
        if not all(branches):
            continue
        section = _SECTION.match(line)
        if section:
            key = section.group(1)
            continue
        if line.lstrip().startswith("--") or not (buffer or line.strip()):
            continue
        buffer.append(line)
        if line.rstrip().endswith(";"):
            statement = "\n".join(buffer).rstrip().rstrip(";")
            buffer = []
            if key is None:
                raise AuditFileError(f"{where}: a statement without a '-- section: key' line before it")
            statements.append(_bind(where, key, statement, values))
            key = None
    if branches:
        raise AuditFileError(f"{name}: \\if without \\endif")
    if buffer:
        raise AuditFileError(f"{name}: the last statement has no closing ';'")
    return statements


def _bind(where: str, key: str, statement: str, values: Mapping[str, str]) -> AuditStatement:
    other = _OTHER_VAR.search(_QUOTED_VAR.sub("", statement))
    if other:
        raise AuditFileError(f"{where}: use :'name' for psql variables, not {other.group(0)!r}")
    params: dict[str, str] = {}

    def placeholder(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise AuditFileError(f"{where}: the psql variable {name!r} is not set (psql -v {name}=...)")
        params[name] = values[name]
        return f"%({name})s"

    query = _QUOTED_VAR.sub(placeholder, statement.replace("%", "%%"))
    return AuditStatement(key, query, params)
