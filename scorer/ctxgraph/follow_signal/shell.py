"""Reading a fix script with a real shell parser: the commands it runs, the files and settings it writes.

A follow signal asks whether a bash script did what a short tip prescribes ("Set ``PermitRootLogin no``
in /etc/ssh/sshd_config", "use a file under /etc/sysctl.d, not ``sysctl -w`` alone"). Matching words
cannot tell a script that *writes* ``PermitRootLogin no`` from one that only *prints* it, greps for it,
or keeps it in a function nobody calls; nor the same file with another key from the same key written
another way. This module parses the script with tree-sitter-bash and returns structured facts
(:class:`ScriptFacts`) that other code compares with what a tip prescribes or forbids.

What is read
------------
- **Commands**: every ``command`` node (pipelines, ``&&``/``||`` lists, subshells, ``$(...)``, bodies of
  if/while/for/case and functions). Wrappers are stripped so the command is what actually runs:
  ``sudo``/``doas`` [opts] [VAR=..], ``env`` [opts] [VAR=..], ``command`` (not ``-v``/``-V``), ``exec``,
  ``nohup``, ``nice``, ``timeout`` [opts] DURATION, ``xargs`` [opts], ``time``, ``stdbuf``, ``ionice``,
  ``chroot`` [opts] DIR, ``runuser -u USER [--]``. The text of ``bash|sh|... -c STR``, ``su ... -c STR``,
  ``runuser ... -c STR``, ``ssh [opts] HOST CMD...``, ``eval ARGS``, a ``trap`` handler, and a script fed
  on stdin to a shell (``bash -s <<EOF``, ``echo cmd | sh``, ``ssh host <<EOF``) is parsed again as a
  script (at most :data:`MAX_NESTED_DEPTH` levels; its facts carry the outer line). ``find ... -exec
  CMD {} ;`` runs CMD with ``{}`` read as the searched path (``ROOT/NAME`` when ``-name`` is given).
  ``echo``/``printf`` text is never read as commands.
- **Variables**: ``NAME=value`` and ``export/readonly/declare/local/typeset NAME=value`` with a literal
  value (or one built from known variables) are expanded in later words: ``$N``, ``${N}``, ``"$N"``,
  ``${N:-default}``. Anything computed (``$(...)``, arrays, ``+=``) makes the name unknown again and
  stays as written. A call of the script's own function is read where it is called, its positional
  parameters (``$1``... ``$9``, ``$#``) bound to the call's words and its writes placed at the call's
  line, so ``set_conf space_left_action email`` writes that key (calls inside calls, up to
  :data:`MAX_INLINED_CALLS` deep); a body never read so (called only from a ``trap``, or past that
  depth) sees the top-level variables as they were at its first top-level call (or at the end of the
  script when it has none). ``for v in a b c`` (literal
  values, at most 16, outermost loop, small body) runs its body once per value.
- **Files written** (:class:`FileWrite`): ``>``/``>|``/``&>`` (``redirect``), ``>>``/``&>>``
  (``append``), except /dev/null, /dev/std*, /dev/tty, /dev/fd/* and fd duplications; ``tee``
  (``tee``/``tee-append``), ``sed -i`` (``sed-i``), ``perl -pi -e`` (``perl-i``),
  ``cp``/``mv``/``install`` (the destination), ``install -d``/``mkdir`` (``mkdir``), ``ln`` (the
  link), ``touch``, ``truncate``, ``dd of=`` (``dd``), ``curl -o``/``wget -O`` (``download``),
  ``crontab -`` (path ``crontab``), ``crudini``, ``augtool set``, ``git config --file`` (``tool``).
  The content is kept when known: heredoc bodies, here-strings, ``echo``/``printf`` output
  (``printf`` formatted approximately), and what flows through ``cat``/``tee`` in a pipeline or out
  of a ``{ ...; }`` block or a for loop made only of such output.
- **Settings** (:class:`Setting`) from written content, read line by line by :func:`content_settings`
  (``key = value``, ``key: value``, ``Key value`` directives, ``[section]`` headers, SQL ``ALTER
  SYSTEM``/``SET GLOBAL|PERSIST``/``ALTER DATABASE|ROLE|USER ... SET``); a bare value written into
  ``/proc/sys/a/b`` is the setting ``a.b``. From ``sed`` scripts: ``s///`` replacements read as a config
  line (``sed``; ``\\1``/``&`` recovered when the group is a literal), replacements that comment the key
  out or delete it, ``/re/d`` (``removed``), ``a``/``i`` text (``sed-append``), ``c`` text (``sed``);
  ``perl -pi -e 's///'`` substitutions are read the same way (``perl``).
  From tools (``how`` in parentheses, file None unless the tool names one): ``sysctl [-w] k=v``
  (``tool:sysctl``, also ``sysctl -p -`` fed on stdin), ``setsebool`` (``tool:setsebool``),
  ``semanage boolean|port|fcontext`` (``tool:semanage``), ``systemctl enable|disable|mask|unmask|
  reenable`` -> unit = enabled/disabled/masked/unmasked and ``set-default`` -> ``default-target``
  (``tool:systemctl``), ``chkconfig UNIT on|off`` (``tool:chkconfig``), ``gsettings set|reset``
  (``tool:gsettings``, key ``schema.key``), ``dconf write|reset`` (``tool:dconf``), ``crudini
  --set|--del`` (``tool:crudini``), ``git config`` (``tool:git``), ``postconf -e|-X`` (``tool:postconf``),
  ``chmod``/``chown``/``chgrp`` (``tool:chmod``/``tool:chown``/``tool:chgrp``, keys mode/owner/group
  on each file), ``install -m/-o/-g`` (``tool:install``), ``mkdir -m`` (``tool:mkdir``),
  ``update-crypto-policies --set`` (``tool:update-crypto-policies``, key ``crypto-policy``),
  ``timedatectl set-ntp|set-timezone|set-local-rtc`` (``tool:timedatectl``, ``ntp``/``timezone``/
  ``local-rtc``), ``hostnamectl set-hostname`` (``tool:hostnamectl``), ``ufw default P [DIR]`` / ``ufw
  enable|disable`` / ``ufw logging L`` (``tool:ufw``), ``firewall-cmd --set-default-zone``
  (``tool:firewall-cmd``), ``authselect select|enable-feature|disable-feature`` (``tool:authselect``),
  ``kubectl set env K=V|K-`` and ``kubectl apply -f -`` content (``tool:kubectl``), ``docker|podman
  ... -e/--env K=V`` (``tool:env``), ``augtool set /files/FILE/KEY V`` (``tool:augeas``), SQL through
  ``psql -c``/``mysql -e`` or on their stdin (``tool:sql``), ``redis-cli CONFIG SET`` (``tool:redis``),
  ``export K=V`` at the top level (``env``).
- **Reachability**: ``reachable=False`` for what certainly never runs: bodies of functions never called
  (calls from uncalled functions do not count; a ``trap`` handler and a call inside ``bash -c`` do; a
  command whose name is an unexpanded variable, like ``"$@"``, counts as calling every function), a
  function defined in code that never runs (it defines nothing), the body of ``if false``/``while
  false``/``until true`` and of a test of written-out values that fails (``[ 0 = 1 ]``, ``[[ 1 -eq 2 ]]``,
  ``test yes != yes``), the ``elif``/``else`` branches of ``if true``, the rest of a list after ``false
  &&``/``true ||`` (``false && a && b``), what follows ``exit`` in the same list, and everything after a
  top-level ``exit``. In doubt, reachable.

Comments never yield anything, and ``echo``/``printf`` output that goes to the terminal is a message:
only output redirected to a file or piped into a command that writes or applies it counts.

Reading is bounded: at most :data:`MAX_SCRIPT_CHARS` of a script (the head and the tail, line numbers
kept), nodes nested deeper than :data:`_MAX_NODE_DEPTH` levels are skipped, and a visit budget caps
the work; any text returns quickly and never raises.
"""

from __future__ import annotations

import fnmatch
import logging
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Final

import tree_sitter
import tree_sitter_bash

PARSER_VERSION: Final[str] = "tree-sitter-bash-1"
# The most of a script read (as :mod:`.scripts` reads), some 50 times the longest fix script of the
# samples and read in well under a second; longer ones are read as head and tail with the middle
# blanked (line numbers kept), where set-up and the final restart or check are.
MAX_SCRIPT_CHARS: Final[int] = 256 * 1024
# Levels of ``bash -c``/``eval``/``ssh`` strings parsed again as scripts.
MAX_NESTED_DEPTH: Final[int] = 3
# Calls of the script's own functions read in place, one inside another (a helper that calls a
# helper); deeper calls, and recursion, fall back on reading the body once. The visit budget bounds
# the total: a helper called 10,000 times is read until it runs out, then no further.
MAX_INLINED_CALLS: Final[int] = 4
# Statement nesting beyond this is hostile, not a fix script; Python's own stack must stay far away.
_MAX_NODE_DEPTH: Final[int] = 120
_VISIT_BUDGET: Final[int] = 400_000
_MAX_LOOP_VALUES: Final[int] = 16
_MAX_LOOP_BODY_BYTES: Final[int] = 8192
_MAX_CONTENT_CHARS: Final[int] = 256 * 1024

_LOG = logging.getLogger(__name__)
_LANGUAGE: Final = tree_sitter.Language(tree_sitter_bash.language())


@dataclass(frozen=True)
class Command:
    """One command the script runs, wrappers stripped (``sudo systemctl ...`` is ``systemctl``)."""

    name: str
    words: tuple[str, ...]
    subcommand: str | None
    flags: frozenset[str]
    line: int
    function: str | None
    reachable: bool
    text: str


@dataclass(frozen=True)
class FileWrite:
    """A file the script writes; ``content`` is the text written when it is known."""

    path: str
    how: str
    line: int
    content: str | None
    reachable: bool


@dataclass(frozen=True)
class Setting:
    """A key the script sets (or removes), the value, where it goes and through which writer."""

    key: str
    value: str
    file: str | None
    how: str
    line: int
    section: str | None = None
    removed: bool = False
    reachable: bool = True


def normal_key(key: str) -> str:
    """The form :meth:`ScriptFacts.settings_of` compares: lower case, ``/proc/sys/`` dropped, and
    ``.``, ``_``, ``-``, ``/`` read as one separator (``net/ipv4/ip_forward`` is ``net.ipv4.ip_forward``)."""
    k = key.strip().lower()
    k = k.removeprefix("/proc/sys/")
    return re.sub(r"[._\-/]+", ".", k).strip(".")


@dataclass
class ScriptFacts:
    """What a script does, as read by :func:`read_script`."""

    commands: list[Command]
    files_written: list[FileWrite]
    settings: list[Setting]
    functions: dict[str, bool]
    parse_errors: int

    def runs(self, name: str, subcommand: str | None = None, flags: Iterable[str] = (),
             reachable_only: bool = True) -> bool:
        """Whether a command ``name`` runs (with that subcommand and at least those flags)."""
        base = name.rsplit("/", 1)[-1]
        want = frozenset(flags)
        return any(c.name == base and (subcommand is None or c.subcommand == subcommand)
                   and want <= c.flags and (c.reachable or not reachable_only) for c in self.commands)

    def settings_of(self, key: str, reachable_only: bool = True) -> list[Setting]:
        """The settings of ``key`` (compared through :func:`normal_key`), also where the script
        writes it under a parent: ``authorization`` is found as ``security.authorization`` (a YAML
        ``security:`` mapping holding ``authorization:``)."""
        want = normal_key(key)
        tail = "." + want
        return [s for s in self.settings
                if (normal_key(s.key) == want or normal_key(s.key).endswith(tail))
                and (s.reachable or not reachable_only)]

    def writes(self, path: str, reachable_only: bool = True) -> list[FileWrite]:
        """Writes to ``path``, to a file under it (a directory prefix), or matching it as a glob; a
        written path that is itself a glob (``find ... -exec``) matches the paths it covers."""
        prefix = path if path.endswith("/") else path + "/"
        pattern = any(ch in path for ch in "*?[")
        out = []
        for w in self.files_written:
            if reachable_only and not w.reachable:
                continue
            p = w.path
            if (p == path or p.rstrip("/") == path.rstrip("/") or p.startswith(prefix)
                    or (pattern and fnmatch.fnmatchcase(p, path))
                    or (any(ch in p for ch in "*?[") and fnmatch.fnmatchcase(path, p))):
                out.append(w)
        return out


# --- config text ---------------------------------------------------------------------------------

_SECTION = re.compile(r"^\[{1,2}\s*([^\[\]]+?)\s*\]{1,2}$")
_KV_EQ = re.compile(r"^(?:(?:export|readonly|declare|typeset|local)\s+(?:-\w+\s+)*)?"
                    r"([A-Za-z_][\w.\-/@]*(?:\[[^\]]*\])?)\s*[+:]?=\s*(.*)$")
_KV_COLON = re.compile(r"^([A-Za-z_][\w.\-/]*)\s*:(?:\s+(.*))?$")
_KV_DIRECTIVE = re.compile(r"^([A-Za-z_][\w.\-]*(?:::[\w.\-]+)*)\s+(.+)$")
_INLINE_COMMENT = re.compile(r"\s+#.*$")
_SQL_HINT = re.compile(r"^\s*(?:ALTER\s+(?:SYSTEM|DATABASE|ROLE|USER)\b|SET\s+(?:GLOBAL|PERSIST|@@))",
                       re.IGNORECASE)
_SQL_SET: Final = (
    (re.compile(r"\bALTER\s+SYSTEM\s+SET\s+([\w.]+)\s*(?:=|\bTO\b)\s*([^;]*)", re.IGNORECASE), False),
    (re.compile(r"\bALTER\s+SYSTEM\s+RESET\s+([\w.]+)", re.IGNORECASE), True),
    (re.compile(r"\bSET\s+(?:GLOBAL\s+|PERSIST_ONLY\s+|PERSIST\s+|@@(?:GLOBAL|PERSIST)\.)([\w.]+)"
                r"\s*(?:=|\bTO\b)\s*([^;]*)", re.IGNORECASE), False),
    (re.compile(r"\bALTER\s+(?:DATABASE|ROLE|USER)\s+\S+(?:\s+IN\s+DATABASE\s+\S+)?\s+SET\s+([\w.]+)"
                r"\s*(?:=|\bTO\b)\s*([^;]*)", re.IGNORECASE), False),
)


def _clean_value(value: str) -> str:
    v = value.strip().rstrip(";").strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        v = v[1:-1]
    return " ".join(v.split())


def _config_line(line: str, assignments_only: bool = False) -> tuple[str, str] | None:
    """``(key, value)`` of one config line, or None when it is not a setting (a lone word, a brace, a tag)."""
    s = _INLINE_COMMENT.sub("", line.strip()).rstrip().rstrip(";").rstrip()
    if not s or s[0] in "{}<" or s.endswith("{"):
        return None
    if s.startswith("- "):  # a YAML list item holding a mapping
        s = s[2:].lstrip()
    m = _KV_EQ.match(s)
    if m:
        return m.group(1), _clean_value(m.group(2))
    if assignments_only:
        return None
    m = _KV_COLON.match(s)
    if m:
        return m.group(1), _clean_value(m.group(2) or "")
    m = _KV_DIRECTIVE.match(s)
    if m:
        return m.group(1), _clean_value(m.group(2))
    return None


def _sql_settings(text: str, line: int) -> list[Setting]:
    found = []
    for rx, removed in _SQL_SET:
        for m in rx.finditer(text):
            value = "" if removed else _clean_value(m.group(2))
            found.append((m.start(), Setting(m.group(1), value, None, "tool:sql",
                                             line + text.count("\n", 0, m.start()), removed=removed)))
    return [s for _, s in sorted(found, key=lambda p: p[0])]


def _text_settings(content: str, assignments_only: bool = False) -> list[tuple[int, str, str, str | None]]:
    """``(line offset, key, value, section)`` of each setting line of config text."""
    out: list[tuple[int, str, str, str | None]] = []
    section = None
    # YAML mappings: the keys a nested key sits under, by indentation, so ``security:`` then
    # ``  authorization: enabled`` is the setting ``security.authorization``.
    parents: list[tuple[int, str]] = []
    for i, raw in enumerate(content.splitlines()):
        s = raw.strip()
        if not s or s[0] in "#;" or s.startswith(("//", "--")):
            continue
        m = _SECTION.match(s)
        if m and not assignments_only:
            section = m.group(1)
            continue
        kv = _config_line(s, assignments_only)
        if not kv:
            continue
        key, value = kv
        bare = _INLINE_COMMENT.sub("", s).rstrip()
        if not assignments_only and not _KV_EQ.match(bare) and _KV_COLON.match(bare):
            indent = len(raw) - len(raw.lstrip())
            while parents and parents[-1][0] >= indent:
                parents.pop()
            if parents:
                key = ".".join(k for _, k in parents) + "." + key
            if not value:
                parents.append((indent, kv[0]))
        out.append((i, key, value, section))
    return out


def content_settings(content: str, file: str | None, how: str, line: int) -> list[Setting]:
    """The settings in config text written to ``file`` (``line`` is where the text starts).

    Each non-blank, non-comment line is read as ``key = value``, ``key: value`` or ``Key value``;
    ``[section]`` headers set the section; lines that fit none are skipped. Text holding an SQL
    statement that persists a setting (or ``how='tool:sql'``) is read as SQL only: those statements
    become ``tool:sql`` settings with no file. A shell script's text (a ``#!`` line, a ``.sh`` file)
    yields only its ``NAME=value`` assignments. Every setting is placed at ``line`` plus its line
    offset in the text."""
    if not content:
        return []
    content = content[:_MAX_CONTENT_CHARS]
    if how == "tool:sql" or any(_SQL_HINT.match(raw) for raw in content.splitlines()):
        return _sql_settings(content, line)  # SQL text: its other statements are not settings
    shellish = content.lstrip().startswith("#!") or (file or "").endswith((".sh", ".bash"))
    return [Setting(key, value, file, how, line + i, section)
            for i, key, value, section in _text_settings(content, shellish)]


# --- sed scripts ---------------------------------------------------------------------------------

@dataclass
class _SedCmd:
    addr: str | None
    cmd: str
    pat: str = ""
    repl: str = ""
    text: str = ""


@dataclass(frozen=True)
class _Edit:
    """A setting a sed script makes, before it is known which file it lands in."""

    key: str
    value: str
    how: str
    removed: bool = False
    section: str | None = None


def _sed_part(s: str, i: int, delim: str) -> tuple[str, int]:
    """The text up to the next unescaped ``delim``; an escaped delimiter becomes the plain character."""
    buf = []
    n = len(s)
    while i < n:
        ch = s[i]
        if ch == "\\" and i + 1 < n:
            buf.append(s[i + 1] if s[i + 1] == delim else s[i:i + 2])
            i += 2
            continue
        if ch == delim:
            return "".join(buf), i + 1
        buf.append(ch)
        i += 1
    return "".join(buf), n


def _sed_addr(s: str, i: int) -> tuple[int, str | None]:
    n = len(s)
    if i < n and s[i] == "/":
        pat, i = _sed_part(s, i + 1, "/")
        while i < n and s[i] in "IM":
            i += 1
        return i, pat
    if i + 1 < n and s[i] == "\\":
        pat, i = _sed_part(s, i + 2, s[i + 1])
        return i, pat
    while i < n and (s[i].isdigit() or s[i] in "~$+"):
        i += 1
    return i, None


def _sed_program(s: str) -> list[_SedCmd]:
    """The commands of a sed script, with their address regex (a small tokenizer: ``;`` inside
    ``s///`` or inside ``a`` text does not end a command)."""
    cmds: list[_SedCmd] = []
    groups: list[str | None] = []
    i, n = 0, len(s)
    for _ in range(1000):
        while i < n and s[i] in " \t\n;":
            i += 1
        if i >= n:
            break
        i, addr = _sed_addr(s, i)
        if i < n and s[i] == ",":
            i, _ = _sed_addr(s, i + 1)
        while i < n and s[i] in " \t":
            i += 1
        if i < n and s[i] == "!":
            addr = None  # a negated address does not name the key
            i += 1
            while i < n and s[i] in " \t":
                i += 1
        if i >= n:
            break
        c = s[i]
        i += 1
        if c == "{":
            groups.append(addr)
            continue
        if c == "}":
            if groups:
                groups.pop()
            continue
        if addr is None and groups:
            addr = groups[-1]
        if c in "sy":
            if i >= n:
                break
            delim = s[i]
            pat, i = _sed_part(s, i + 1, delim)
            repl, i = _sed_part(s, i, delim)
            while i < n and s[i] not in ";\n}":
                if s[i] == "w":  # the w flag takes the rest of the line as a file name
                    while i < n and s[i] != "\n":
                        i += 1
                    break
                i += 1
            if c == "s":
                cmds.append(_SedCmd(addr, "s", pat, repl))
        elif c in "aic":
            while i < n and s[i] in " \t":
                i += 1
            if i < n and s[i] == "\\":
                i += 1
                if i < n and s[i] == "\n":
                    i += 1
            buf = []
            while i < n and s[i] != "\n":
                if s[i] == "\\" and i + 1 < n:
                    buf.append(s[i + 1])
                    i += 2
                    continue
                buf.append(s[i])
                i += 1
            cmds.append(_SedCmd(addr, c, text="".join(buf).strip()))
        elif c in "rRwW:#e":
            while i < n and s[i] != "\n":
                i += 1
        elif c in "btT":
            while i < n and s[i] not in ";\n":
                i += 1
        else:
            cmds.append(_SedCmd(addr, c))
    return cmds


_WS_CLASS = re.compile(r"(?:\\s|\\t|\[\[:(?:space|blank):\]\]|\[ \\t\]|\[\\t \]|\[ \])"
                       r"(?:\\?[*+?]|\\\{[\d,]*\\\}|\{[\d,]*\})?")
_BRACKET = re.compile(r"\[\^?\]?(?:\[:[a-z]+:\]|[^\]])*\]")
_KEY_AT_START = re.compile(r"[A-Za-z_][\w.\-/]*")


def _regex_key(pat: str | None, ere: bool) -> str | None:
    """The literal key a sed regex looks for: ``^#\\?\\s*PermitRootLogin.*`` -> ``PermitRootLogin``."""
    if not pat:
        return None
    t = _WS_CLASS.sub(" ", pat)
    t = _BRACKET.sub("", t)
    if ere:
        t = re.sub(r"(?<!\\)[()|?+]|(?<!\\)\{[\d,]*\}", "", t)
    else:
        t = re.sub(r"\\[()|?+]|\\\{[\d,]*\\\}", "", t)
    t = re.sub(r"(?<!\\)\.\*", " ", t).replace("*", "").replace("^", "")
    t = re.sub(r"\\(.)", r"\1", t.rstrip("$"))
    t = t.lstrip(" \t#;")
    m = _KEY_AT_START.match(t)
    key = m.group(0).rstrip(".-/") if m else ""
    return key or None


def _regex_literal(pat: str, ere: bool) -> str | None:
    """The text a sed regex (or group) matches when it is a plain literal (blank classes read as a
    blank), else None."""
    t = _WS_CLASS.sub(" ", pat)
    t = t.removeprefix("^")
    t = t[:-1] if t.endswith("$") and not t.endswith("\\$") else t
    special = r"(?<!\\)[\[\]*+?{}()|]" if ere else r"(?<!\\)[\[\]*]|\\[(){}|?+]"
    if re.search(special, t):
        return None
    return re.sub(r"\\(.)", r"\1", t)


def _regex_groups(pat: str, ere: bool) -> list[str]:
    """The source of each capture group, in the order the groups open."""
    opens: list[tuple[int, int]] = []
    groups: dict[int, str] = {}
    count = 0
    i = 0
    while i < len(pat):
        if pat[i] == "\\" and i + 1 < len(pat):
            if not ere and pat[i + 1] in "()":
                if pat[i + 1] == "(":
                    opens.append((count, i + 2))
                    count += 1
                elif opens:
                    k, start = opens.pop()
                    groups[k] = pat[start:i]
            i += 2
            continue
        if ere and pat[i] == "(":
            opens.append((count, i + 1))
            count += 1
        elif ere and pat[i] == ")" and opens:
            k, start = opens.pop()
            groups[k] = pat[start:i]
        i += 1
    return [groups.get(k, "(") for k in range(count)]


def _sed_replacement(repl: str, pat: str, ere: bool) -> str:
    """The replacement text with ``\\N`` and ``&`` filled in where the group is a literal; an unknown
    part becomes NUL."""
    groups = _regex_groups(pat, ere)
    out = []
    i = 0
    while i < len(repl):
        ch = repl[i]
        if ch == "\\" and i + 1 < len(repl):
            nx = repl[i + 1]
            i += 2
            if nx.isdigit():
                n = int(nx)
                src = pat if n == 0 else (groups[n - 1] if n <= len(groups) else None)
                lit = _regex_literal(src, ere) if src is not None else None
                out.append("\0" if lit is None else lit)
            elif nx == "n":
                out.append("\n")
            elif nx == "t":
                out.append("\t")
            elif nx not in "ULElu":
                out.append(nx)
            continue
        if ch == "&":
            lit = _regex_literal(pat, ere)
            out.append("\0" if lit is None else lit)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _sed_edits(script: str, ere: bool) -> list[_Edit]:
    """The settings a sed script makes or removes (see the module docstring)."""
    edits: list[_Edit] = []
    for c in _sed_program(script):
        akey = _regex_key(c.addr, ere)
        sect = re.match(r"^\^?\\?\[([\w.\-: ]+)\\?\]", c.addr or "")
        section = sect.group(1) if sect else None
        if c.cmd == "d":
            if akey:
                edits.append(_Edit(akey, "", "sed", removed=True))
        elif c.cmd in "ai":
            edits.extend(_Edit(k, v, "sed-append", section=section or sec)
                         for _, k, v, sec in _text_settings(c.text))
        elif c.cmd == "c":
            if c.text.startswith(("#", ";")) or not c.text:
                if akey:
                    edits.append(_Edit(akey, "", "sed", removed=True))
            else:
                edits.extend(_Edit(k, v, "sed", section=section or sec)
                             for _, k, v, sec in _text_settings(c.text))
        elif c.cmd == "s":
            pkey = _regex_key(c.pat, ere)
            repl = _sed_replacement(c.repl, c.pat, ere)
            r = repl.strip()
            if r.startswith(("#", ";")) or (not r and pkey):
                key = pkey or akey
                if key:
                    kv = _config_line(r.lstrip("#; \t").replace("\0", ""))
                    value = kv[1] if kv and normal_key(kv[0]) == normal_key(key) else ""
                    edits.append(_Edit(key, value, "sed", removed=True))
                continue
            if "\0" in repl:
                continue
            found = _text_settings(repl)
            if found:
                edits.extend(_Edit(k, v, "sed", section=section or sec) for _, k, v, sec in found)
            elif akey and r and " " not in r and "=" not in r:
                edits.append(_Edit(akey, _clean_value(r), "sed", section=section))  # '/^Key/s/yes/no/'
    return edits


# --- words and options ---------------------------------------------------------------------------

def _parse_opts(args: list[str], short_val: str = "", long_val: Iterable[str] = ()
                ) -> tuple[list[tuple[str, str]], list[str]]:
    """Options (``('-m', '0644')``, ``('--now', '')``) and positional arguments; ``--`` ends options."""
    long_val = set(long_val)
    opts: list[tuple[str, str]] = []
    pos: list[str] = []
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        i += 1
        if a == "--":
            pos.extend(args[i:])
            break
        if a.startswith("--"):
            k, eq, v = a.partition("=")
            if not eq and k in long_val and i < n:
                v = args[i]
                i += 1
            opts.append((k, v))
        elif a.startswith("-") and len(a) > 1:
            for j in range(1, len(a)):
                ch = a[j]
                if ch in short_val:
                    v = a[j + 1:]
                    if not v and i < n:
                        v = args[i]
                        i += 1
                    opts.append(("-" + ch, v))
                    break
                opts.append(("-" + ch, ""))
        else:
            pos.append(a)
    return opts, pos


def _flags_and_subcommand(args: Iterable[str]) -> tuple[frozenset[str], str | None]:
    flags: set[str] = set()
    sub = None
    ended = False
    for a in args:
        if ended or not a.startswith("-"):
            if sub is None:
                sub = a
            continue
        if a == "--":
            ended = True
        elif a.startswith("--"):
            flags.add(a.split("=", 1)[0])
        elif len(a) > 1 and a[1].isdigit():
            flags.add(a)
        else:
            for ch in a[1:]:
                if not ch.isalpha():
                    break  # the rest is an attached value (-i.bak, -n5)
                flags.add("-" + ch)
    return frozenset(flags), sub


# name -> (short options taking a value, long options taking a value, positional words to skip)
_WRAPPERS: Final[dict[str, tuple[str, frozenset[str], int]]] = {
    "sudo": ("ugCDprRtTU", frozenset({"--user", "--group", "--prompt", "--chdir", "--chroot", "--role",
                                      "--type", "--close-from", "--command-timeout", "--other-user",
                                      "--host"}), 0),
    "doas": ("uC", frozenset(), 0),
    "env": ("uCS", frozenset({"--unset", "--chdir", "--split-string"}), 0),
    "nice": ("n", frozenset({"--adjustment"}), 0),
    "timeout": ("sk", frozenset({"--signal", "--kill-after"}), 1),
    "xargs": ("IdnPLsEa", frozenset({"--arg-file", "--delimiter", "--max-args", "--max-procs",
                                     "--max-lines", "--max-chars"}), 0),
    "stdbuf": ("ioe", frozenset({"--input", "--output", "--error"}), 0),
    "ionice": ("cnP", frozenset({"--class", "--classdata"}), 0),
    "chroot": ("", frozenset({"--userspec", "--groups"}), 1),
    "time": ("fo", frozenset({"--format", "--output"}), 0),
    "nohup": ("", frozenset(), 0),
    "exec": ("a", frozenset(), 0),
    "command": ("", frozenset(), 0),
    "runuser": ("ugG", frozenset({"--user", "--group", "--supp-group"}), 0),
}
_ASSIGN_WORD = re.compile(r"^[A-Za-z_]\w*=")
_SHELLS: Final = frozenset({"bash", "sh", "dash", "zsh", "ksh", "ash", "mksh"})


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1] if "/" in word and not word.endswith("/") else word


def _short_takes_next(arg: str, short_val: str) -> bool:
    """Whether a short option cluster ends with an option whose value is the next word (``-u root``,
    ``-nu root``), rather than attached to it (``-uroot``)."""
    for k in range(1, len(arg)):
        if arg[k] in short_val:
            return k == len(arg) - 1
        if not arg[k].isalpha():
            return False
    return False


def _strip_wrappers(words: list[str]) -> list[str]:
    """The words of the command a wrapper chain finally runs (the last wrapper when it runs nothing)."""
    i = 0
    for _ in range(12):
        if i >= len(words):
            break
        w = _base(words[i])
        spec = _WRAPPERS.get(w)
        if spec is None:
            break
        rest = words[i + 1:]
        if w == "command" and rest and rest[0] in ("-v", "-V"):
            break  # a lookup, not a run
        if w == "runuser" and not any(a in ("-u", "--user") or a.startswith("--user=") for a in rest):
            break  # runuser -l USER -c CMD is read as a nested script
        short_val, long_val, skip = spec
        j = i + 1
        while j < len(words):
            a = words[j]
            if a == "--":
                j += 1
                break
            if not a.startswith("-") or a == "-":
                break
            j += 1
            if a.startswith("--"):
                if "=" not in a and a in long_val:
                    j += 1
            elif _short_takes_next(a, short_val):
                j += 1
        if w in ("sudo", "env", "doas"):
            while j < len(words) and _ASSIGN_WORD.match(words[j]):
                j += 1
        j += skip
        if j >= len(words):
            return [words[i]]
        i = j
    return words[i:]


_BACKSLASH: Final = re.compile(r"\\(.)", re.DOTALL)
_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "a": "\a", "e": "\x1b", "'": "'", '"': '"',
                   "0": "", "v": "\v", "f": "\f", "b": "\b"}


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), "\\" + m.group(1)), text, flags=re.DOTALL)


_PRINTF_SPEC = re.compile(r"%(?:%|[-+ #0]*\d*(?:\.\d+)?[sdibqfuxXoceEgG])")


def _printf(fmt: str, args: list[str]) -> str:
    """printf's output, approximately: conversions filled with the arguments, the format reused while
    arguments remain."""
    out = []
    k = 0
    for _ in range(64):
        used = False
        pos = 0
        for m in _PRINTF_SPEC.finditer(fmt):
            out.append(_unescape(fmt[pos:m.start()]))
            pos = m.end()
            if m.group(0) == "%%":
                out.append("%")
                continue
            arg = args[k] if k < len(args) else ""
            k += 1
            used = True
            out.append(_unescape(arg) if m.group(0).endswith("b") else arg)
        out.append(_unescape(fmt[pos:]))
        if not used or k >= len(args):
            break
    return "".join(out)


# --- the walk ------------------------------------------------------------------------------------

@dataclass
class _Out:
    """What a command writes to stdout, when known: the text, how it was produced, from which line;
    ``edits`` are settings of a sed without -i, waiting for the file its output goes to."""

    text: str | None
    how: str
    line: int
    edits: tuple[_Edit, ...] = ()


def _concat(outs: list[_Out | None]) -> _Out | None:
    if not outs or any(o is None or o.text is None for o in outs):
        return None
    return _Out("".join(o.text or "" for o in outs), outs[0].how, outs[0].line)  # type: ignore[union-attr]


@dataclass
class _Sink:
    """Everything found, across nested scripts; reachability is settled at the end."""

    parser: tree_sitter.Parser
    commands: list[Command] = field(default_factory=list)
    writes: list[tuple[FileWrite, str | None]] = field(default_factory=list)
    settings: list[tuple[Setting, str | None]] = field(default_factory=list)
    calls: list[tuple[str | None, str, bool]] = field(default_factory=list)
    defined: dict[str, None] = field(default_factory=dict)
    dynamic_call: bool = False
    budget: int = _VISIT_BUDGET


_NOT_FILES: Final = frozenset({"/dev/null", "/dev/stderr", "/dev/stdout", "/dev/tty", "/dev/stdin", "-", ""})
_STDIN_NAMES: Final = frozenset({"-", "/dev/stdin"})


def _const(nodes: list[tree_sitter.Node]) -> bool | None:
    """The value of a condition that is certainly ``true``/``:`` or ``false`` (None otherwise)."""
    named = [n for n in nodes if n.is_named and n.type != "comment"]
    if len(named) != 1:
        return None
    node = named[0]
    if node.type == "negated_command":
        inner = _const([c for c in node.children if c.is_named])
        return None if inner is None else not inner
    if node.type == "list":
        # ``false && x`` is false and ``true || x`` true whatever x is; tree-sitter-bash nests a
        # longer list to the left, so ``false && x && y`` is decided by its innermost head. Walked
        # down, not recursed (a hostile list nests thousands deep), as far as the operators keep
        # the head's value.
        operators = []
        for _ in range(_MAX_NODE_DEPTH):
            parts = [c for c in node.children if c.type != "comment"]
            if len(parts) != 3 or parts[1].is_named:
                return None
            operators.append(parts[1].type)
            node = parts[0]
            if node.type != "list":
                break
        else:
            return None
        head = _const([node])
        if head is None or any((op == "&&") != (head is False) for op in operators):
            return None
        return head
    if node.type == "test_command":
        inner = [c for c in node.children if c.is_named]
        double = node.text.startswith(b"[[") if node.text else False
        if len(inner) == 1 and inner[0].type == "binary_expression":
            sides = inner[0].children
            if len(sides) == 3:
                return _test_outcome(_literal_word(sides[0]), _node_text(sides[1]), _literal_word(sides[2]),
                                     double)
        return None
    if node.type != "command":
        return None
    name = node.child_by_field_name("name")
    word = name.text.decode("utf-8", "replace") if name is not None and name.text else ""
    if word in ("true", ":", "/bin/true", "/usr/bin/true"):
        return True
    if word in ("false", "/bin/false", "/usr/bin/false"):
        return False
    if word == "test":
        args = node.children_by_field_name("argument")
        if len(args) == 3:
            return _test_outcome(_literal_word(args[0]), _node_text(args[1]), _literal_word(args[2]), False)
    return None


def _node_text(node: tree_sitter.Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text else ""


def _literal_word(node: tree_sitter.Node) -> str | None:
    """A test operand's value when it is written out (a number, a word, a quoted string without
    expansions); None when the shell computes it."""
    if node.type in ("number", "word"):
        return _node_text(node)
    if node.type == "raw_string":
        return _node_text(node)[1:-1]
    if node.type == "string" and all(c.type in ('"', "string_content") for c in node.children):
        return _node_text(node)[1:-1]
    return None


def _test_outcome(a: str | None, op: str, b: str | None, double: bool) -> bool | None:
    """The outcome of ``[ a op b ]`` (``[[ ]]`` when ``double``) when both sides are written out."""
    if a is None or b is None:
        return None
    if op == "=" or (op == "==" and double):
        return a == b
    if op == "!=":
        return a != b
    compare = {"-eq": int.__eq__, "-ne": int.__ne__, "-lt": int.__lt__, "-le": int.__le__,
               "-gt": int.__gt__, "-ge": int.__ge__}.get(op)
    if compare is None or not re.fullmatch(r"-?\d{1,18}", a) or not re.fullmatch(r"-?\d{1,18}", b):
        return None
    return bool(compare(int(a), int(b)))


def _is_exit(node: tree_sitter.Node) -> bool:
    if node.type == "redirected_statement":
        node = node.child_by_field_name("body") or node
    for _ in range(_MAX_NODE_DEPTH):  # `exit 1 && a && b` nests lists on the left
        if node.type != "list" or not node.named_children:
            break
        node = node.named_children[0]
    if node.type != "command":
        return False
    name = node.child_by_field_name("name")
    return name is not None and name.text == b"exit"


class _Reader:
    """Walks one script (the outer one, or a nested ``bash -c`` string) into a shared :class:`_Sink`."""

    def __init__(self, sink: _Sink, src: bytes, env: dict[str, str], fn: str | None, reach: bool,
                 fixed_line: int | None, nest: int) -> None:
        self.sink, self.src, self.env = sink, src, env
        self.fn, self.reach, self.fixed_line, self.nest = fn, reach, fixed_line, nest
        self.depth = 0
        self.loop_depth = 0
        self.dirty = False  # set when a word held something that could not be resolved
        self.pending: deque[tuple[str, tree_sitter.Node]] = deque()  # function bodies, read last
        self.done: set[int] = set()
        self.first_call_env: dict[str, dict[str, str]] = {}
        self.bodies: dict[str, tree_sitter.Node] = {}  # functions defined so far, by name
        self.inlined = 0  # calls being read in place, one inside another

    # -- entry points --

    def read(self, root: tree_sitter.Node) -> None:
        self._seq(root.children, top=True)
        final_env = self.env
        while self.pending:
            name, body = self.pending.popleft()
            if body.start_byte in self.done:
                continue
            self.done.add(body.start_byte)
            self.env = dict(self.first_call_env.get(name, final_env))
            self.fn, self.reach = name, True
            self._stmt(body)

    def _line(self, node: tree_sitter.Node) -> int:
        return self.fixed_line or node.start_point[0] + 1

    def _text(self, node: tree_sitter.Node) -> str:
        return self.src[node.start_byte:node.end_byte].decode("utf-8", "replace")

    # -- recording --

    def _set(self, key: str, value: str, file: str | None, how: str, line: int,
             section: str | None = None, removed: bool = False) -> None:
        if key:
            self.sink.settings.append((Setting(key, value, file, how, line, section or None, removed,
                                               self.reach), self.fn))

    def _content(self, content: str, file: str | None, how: str, line: int) -> None:
        if file and file.startswith("/proc/sys/"):
            bare = content.strip()
            if bare and "\n" not in bare and "=" not in bare:
                self._set(file[len("/proc/sys/"):].replace("/", "."), _clean_value(bare), file, how, line)
                return
        spread = how in ("heredoc", "tool:sql") and not self.fixed_line  # a heredoc's lines are script lines
        for s in content_settings(content, file, how, line):
            self._set(s.key, s.value, s.file, s.how, s.line if spread else line, s.section, s.removed)

    def _write(self, path: str, how: str, line: int, out: _Out | None = None) -> None:
        if path in _NOT_FILES or path.startswith("/dev/fd/"):
            return
        content = out.text if out is not None else None
        self.sink.writes.append((FileWrite(path, how, line, content, self.reach), self.fn))
        if out is None:
            return
        if content:
            self._content(content, path, out.how, out.line)
        for e in out.edits:
            self._set(e.key, e.value, path, e.how, line, e.section, e.removed)

    def _nested(self, text: str, line: int) -> None:
        if self.nest >= MAX_NESTED_DEPTH or not text.strip() or self.sink.budget <= 0:
            return
        src = text[:MAX_SCRIPT_CHARS].encode("utf-8", "replace")
        tree = self.sink.parser.parse(src)
        inner = _Reader(self.sink, src, dict(self.env), self.fn, self.reach, line, self.nest + 1)
        inner.depth = self.depth  # the depth cap guards Python's stack, which nesting shares
        inner.read(tree.root_node)

    # -- words --

    def _value(self, node: tree_sitter.Node | None, depth: int = 0) -> str:
        """A word as the shell passes it: quotes removed, known variables expanded."""
        if node is None:
            return ""
        t = node.type
        if depth > 40:
            self.dirty = True
            return self._text(node)
        if t == "word":
            text = self._text(node)
            return _BACKSLASH.sub(r"\1", text) if "\\" in text else text
        if t in ("number", "variable_name", "extglob_pattern"):
            return self._text(node)
        if t == "raw_string":
            return self._text(node)[1:-1]
        if t == "ansi_c_string":
            return _unescape(self._text(node)[2:-1])
        if t == "command_name":
            named = [c for c in node.children if c.is_named]
            return self._value(named[0], depth + 1) if named else self._text(node)
        if t in ("string", "translated_string"):
            raw = self._text(node)
            start = node.start_byte + raw.index('"') + 1 if '"' in raw else node.start_byte
            end = node.end_byte - 1 if raw.endswith('"') and len(raw) > 1 else node.end_byte
            return self._splice(node, start, end, depth, _dq_unescape)
        if t == "concatenation":
            return self._splice(node, node.start_byte, node.end_byte, depth, lambda s: s)
        if t == "simple_expansion":
            named = [c for c in node.children if c.is_named]
            if named and named[0].type == "variable_name":
                name = self._text(named[0])
                if name in self.env:
                    return self.env[name]
            self.dirty = True
            return self._text(node)
        if t == "expansion":
            return self._expansion(node, depth)
        self.dirty = True
        return self._text(node)

    def _splice(self, node: tree_sitter.Node, start: int, end: int, depth: int, raw_fn) -> str:
        parts = []
        pos = start
        for c in node.children:
            if c.start_byte < start or c.end_byte > end:
                continue
            if c.start_byte > pos:
                parts.append(raw_fn(self.src[pos:c.start_byte].decode("utf-8", "replace")))
            if c.type in ("string_content", "heredoc_content"):
                parts.append(raw_fn(self._text(c)))
            else:
                # tree-sitter-bash starts a ``${...}`` after a blank at the blank ("${a} ${b}"): the
                # blank is the string's, not the expansion's.
                text = self._text(c)
                lead = text[: len(text) - len(text.lstrip())]
                if lead:
                    parts.append(raw_fn(lead))
                parts.append(self._value(c, depth + 1))
            pos = c.end_byte
        if pos < end:
            parts.append(raw_fn(self.src[pos:end].decode("utf-8", "replace")))
        return "".join(parts)

    def _expansion(self, node: tree_sitter.Node, depth: int) -> str:
        kids = [c for c in node.children if c.type not in ("${", "}")]
        if kids and kids[0].type == "variable_name":
            name = self._text(kids[0])
            op = node.child_by_field_name("operator")
            if len(kids) == 1 and name in self.env:
                return self.env[name]
            if op is not None and self._text(op) in (":-", "-", ":=", "="):
                if name in self.env and (self.env[name] or self._text(op) in ("-", "=")):
                    return self.env[name]
                rest = [c for c in kids[1:] if c.start_byte != op.start_byte]
                return "".join(self._value(c, depth + 1) for c in rest)
        self.dirty = True
        return self._text(node)

    def _heredoc_quoted(self, redirect: tree_sitter.Node) -> bool:
        """A quoted delimiter (``<<'EOF'``, ``<<"EOF"``, ``<<\\EOF``) keeps the body literal."""
        start = next((c for c in redirect.children if c.type == "heredoc_start"), None)
        return start is not None and any(q in self._text(start) for q in "'\"\\")

    def _heredoc_text(self, redirect: tree_sitter.Node, body: tree_sitter.Node) -> str:
        if self._heredoc_quoted(redirect):
            text = self._text(body)
        else:
            text = self._splice(body, body.start_byte, body.end_byte, 0,
                                lambda s: re.sub(r"\\([$`\\])", r"\1", s))
        if any(c.type == "<<-" for c in redirect.children):
            text = "\n".join(line.lstrip("\t") for line in text.split("\n"))
        return text

    # -- statements --

    def _stmt(self, node: tree_sitter.Node, stdin: _Out | None = None) -> _Out | None:
        if self.depth > _MAX_NODE_DEPTH or self.sink.budget <= 0:
            return None
        self.sink.budget -= 1
        self.depth += 1
        try:
            handler = _DISPATCH.get(node.type)
            if handler is not None:
                return handler(self, node, stdin)
            for c in node.children:
                if c.child_count and c.type != "comment":
                    self._stmt(c)
            return None
        finally:
            self.depth -= 1

    def _seq(self, children: Iterable[tree_sitter.Node], top: bool = False) -> _Out | None:
        saved = self.reach
        outs: list[_Out | None] = []
        for c in children:
            if not c.is_named or c.type == "comment":
                continue
            outs.append(self._stmt(c))
            if top and _is_exit(c):
                self.reach = False
        if not top:
            self.reach = saved
        return _concat(outs)

    def _block(self, node: tree_sitter.Node, stdin: _Out | None) -> _Out | None:
        return self._seq(node.children)

    def _list(self, node: tree_sitter.Node, stdin: _Out | None) -> _Out | None:
        saved = self.reach
        first = True
        killed = skip_next = False
        prev = None
        last: _Out | None = None
        for c in node.children:
            if not c.is_named:
                if prev is not None:
                    if _is_exit(prev):
                        killed = True
                    val = _const([prev])
                    skip_next = (c.type == "&&" and val is False) or (c.type == "||" and val is True)
                continue
            if c.type == "comment":
                continue
            self.reach = saved and not killed and not skip_next
            last = self._stmt(c, stdin if first else None)
            first, skip_next, prev = False, False, c
        self.reach = saved
        return last

    def _pipeline(self, node: tree_sitter.Node, stdin: _Out | None) -> _Out | None:
        out = stdin
        for c in node.children:
            if c.is_named and c.type != "comment":
                out = self._stmt(c, out)
        return out

    def _redirected(self, node: tree_sitter.Node, stdin: _Out | None) -> _Out | None:
        body = node.child_by_field_name("body")
        redirects: list[tree_sitter.Node] = []
        tails: list[tuple[str, tree_sitter.Node]] = []
        feed = stdin
        for c in node.children:
            if body is not None and c.id == body.id:
                continue
            if c.type == "file_redirect":
                redirects.append(c)
            elif c.type == "herestring_redirect":
                feed = self._herestring(c)
            elif c.type == "heredoc_redirect":
                # tree-sitter-bash hangs what follows the heredoc start on that line under it:
                # further redirects, a pipeline, or the rest of an && / || list.
                hbody = None
                for i, h in enumerate(c.children):
                    if h.type == "file_redirect":
                        redirects.append(h)
                    elif h.type == "heredoc_body":
                        hbody = h
                    elif h.type == "pipeline":
                        tails.append(("pipe", h))
                    elif c.field_name_for_child(i) == "right":
                        tails.append(("list", h))
                if hbody is not None:
                    feed = _Out(self._heredoc_text(c, hbody), "heredoc", self._line(hbody))
                    if not self._heredoc_quoted(c):
                        self._stmt(hbody)  # command substitutions in an unquoted heredoc run
            elif c.is_named and c.child_count:
                self._stmt(c)
        extra = [self._value(d) for r in redirects for d in r.children_by_field_name("destination")[1:]]
        if body is None:
            out = None
        elif body.type == "command":
            out = self._command(body, feed, extra)
        else:
            out = self._stmt(body, feed)
        out = self._redirect_out(redirects, out, self._line(node))
        for kind, t in tails:
            if kind == "pipe":
                out = self._pipeline(t, out)
            else:
                self._stmt(t)
                out = None
        return out

    def _herestring(self, node: tree_sitter.Node) -> _Out | None:
        named = [c for c in node.children if c.is_named]
        if not named:
            return None
        return _Out(self._value(named[0]) + "\n", "here-string", self._line(node))

    def _redirect_out(self, redirects: list[tree_sitter.Node], out: _Out | None, line: int) -> _Out | None:
        for r in redirects:
            op = next((c.type for c in r.children if not c.is_named), "")
            if op not in (">", ">>", ">|", "&>", "&>>", ">&"):
                continue
            dest = r.child_by_field_name("destination")
            if dest is None:
                continue
            if op == ">&" and (dest.type == "number" or self._text(dest) == "-"):
                continue  # 2>&1, >&2: a duplication, not a file
            desc = r.child_by_field_name("descriptor")
            stdout = op.startswith("&") or desc is None or self._text(desc) == "1"
            path = self._value(dest)
            if stdout:
                if path not in _NOT_FILES and not path.startswith("/dev/fd/"):
                    self._write(path, "append" if ">>" in op else "redirect", line, out)
                out = None
            else:
                self._write(path, "append" if ">>" in op else "redirect", line)
        return out

    def _command(self, node: tree_sitter.Node, stdin: _Out | None, extra: list[str] | None = None
                 ) -> _Out | None:
        name = node.child_by_field_name("name")
        args = node.children_by_field_name("argument")
        redirects: list[tree_sitter.Node] = []
        for c in args:
            if c.child_count:
                self._stmt(c)  # command substitutions in arguments run
        for c in node.children:
            if c.type == "herestring_redirect":
                stdin = self._herestring(c)
            elif c.type == "file_redirect":
                redirects.append(c)
            elif c.type == "variable_assignment":
                value = c.child_by_field_name("value")  # a prefix assignment only lives for the command
                if value is not None and value.child_count:
                    self._stmt(value)
        if name is None:
            return None
        words = [self._value(name)] + [self._value(a) for a in args] + list(extra or ())
        text = " ".join(self._text(node).replace("\\\n", " ").split())[:300]
        out = self._run(words, stdin, text, self._line(node))
        return self._redirect_out(redirects, out, self._line(node)) if redirects else out

    def _run(self, words: list[str], stdin: _Out | None, text: str, line: int) -> _Out | None:
        words = _strip_wrappers(words)
        if not words:
            return None
        name = _base(words[0])
        args = words[1:]
        flags, sub = _flags_and_subcommand(args)
        self.sink.commands.append(Command(name, tuple(args), sub, flags, line, self.fn, self.reach, text))
        self.sink.calls.append((self.fn, name, self.reach))
        if name.startswith("$") and self.reach:
            self.sink.dynamic_call = True
        if self.fn is None and name not in self.first_call_env:
            self.first_call_env[name] = dict(self.env)
        if name in self.bodies and self.inlined < MAX_INLINED_CALLS:
            self._call(name, args, line)
            return None
        handler = _HANDLERS.get(name)
        if handler is None:
            return None
        return handler(self, args, stdin, line, text)

    def _call(self, name: str, args: list[str], line: int) -> None:
        """A script's own helper (``set_conf space_left_action email``) read where it is called, its
        positional parameters bound to the call's words, so what it writes is known key by key; a
        body is otherwise read once, with the variables of its first call and none of its arguments.
        Variables the body sets stay its own (``local`` is the common case)."""
        body = self.bodies[name]
        saved_env, saved_fn, saved_line = self.env, self.fn, self.fixed_line
        # What the body does happens at the call: its commands and settings take the call's line,
        # so the script's order is the order they run in (the last write of a key is the call's).
        self.fixed_line = line if self.fixed_line is None else self.fixed_line
        self.env = dict(self.env)
        for i, arg in enumerate(args[:9], start=1):
            self.env[str(i)] = arg
        for i in range(len(args) + 1, 10):
            self.env.pop(str(i), None)
        self.env["#"] = str(len(args))
        self.fn = name
        self.inlined += 1
        try:
            self.done.add(body.start_byte)
            self._stmt(body)
        finally:
            self.inlined -= 1
            self.env, self.fn, self.fixed_line = saved_env, saved_fn, saved_line

    def _assignment(self, node: tree_sitter.Node) -> tuple[str, str, bool]:
        name_node = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        name = self._text(name_node) if name_node is not None else ""
        if value is not None and value.child_count:
            self._stmt(value)
        append = any(c.type == "+=" for c in node.children)
        self.dirty = False
        text = self._value(value) if value is not None else ""
        literal = not self.dirty and not append and (value is None or value.type != "array")
        return name, text, literal

    def _assign_stmt(self, node: tree_sitter.Node, stdin: _Out | None) -> _Out | None:
        if node.type == "variable_assignments":
            for c in node.children:
                if c.type == "variable_assignment":
                    self._assign_stmt(c, None)
            return None
        name, value, literal = self._assignment(node)
        if literal:
            self.env[name] = value
        else:
            self.env.pop(name, None)
        return None

    def _declaration(self, node: tree_sitter.Node, stdin: _Out | None) -> _Out | None:
        kw = node.children[0].type if node.children else ""
        options = [self._text(c) for c in node.children if c.type == "word" and self._text(c).startswith("-")]
        array = any("a" in o or "A" in o for o in options)
        for c in node.children:
            if c.type != "variable_assignment":
                continue
            name, value, literal = self._assignment(c)
            if literal and not array:
                self.env[name] = value
            else:
                self.env.pop(name, None)
            if kw == "export" and self.fn is None:
                self._set(name, _clean_value(value), None, "env", self._line(c))
        return None

    def _define(self, node: tree_sitter.Node, stdin: _Out | None) -> _Out | None:
        name = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name is not None and body is not None:
            fname = self._text(name)
            if not self.reach:
                # A definition in code that never runs defines nothing: a call of that name runs
                # no such function, and the body is read as unreachable.
                self._stmt(body)
                return None
            self.sink.defined.setdefault(fname, None)
            self.bodies[fname] = body
            self.pending.append((fname, body))
        return None

    def _if(self, node: tree_sitter.Node, stdin: _Out | None) -> _Out | None:
        saved = self.reach
        clauses: list[tree_sitter.Node] = []
        parts: dict[str, list[tree_sitter.Node]] = {"cond": [], "body": []}
        phase = "cond"
        for c in node.children:
            if c.type == "then":
                phase = "body"
            elif c.type in ("elif_clause", "else_clause"):
                clauses.append(c)
            elif c.is_named and c.type != "comment":
                parts[phase].append(c)
        value = _const(parts["cond"])
        self._seq(parts["cond"])
        self.reach = saved and value is not False
        self._seq(parts["body"])
        rest = saved and value is not True
        for cl in clauses:
            cond: list[tree_sitter.Node] = []
            body: list[tree_sitter.Node] = []
            into = cond if cl.type == "elif_clause" else body
            for c in cl.children:
                if c.type == "then":
                    into = body
                elif c.is_named and c.type != "comment":
                    into.append(c)
            self.reach = rest
            val = _const(cond) if cl.type == "elif_clause" else None
            self._seq(cond)
            self.reach = rest and val is not False
            self._seq(body)
            if val is True:
                rest = False
        self.reach = saved
        return None

    def _while(self, node: tree_sitter.Node, stdin: _Out | None) -> _Out | None:
        until = bool(node.children) and node.children[0].type == "until"
        cond = list(node.children_by_field_name("condition"))
        body = node.child_by_field_name("body")
        value = _const(cond)
        self._seq(cond)
        saved = self.reach
        self.reach = saved and value is not until
        if body is not None:
            self._stmt(body)
        self.reach = saved
        return None  # how often the body runs is unknown, so is what it prints

    def _for(self, node: tree_sitter.Node, stdin: _Out | None) -> _Out | None:
        var = node.child_by_field_name("variable")
        body = node.child_by_field_name("body")
        values = list(node.children_by_field_name("value"))
        for v in values:
            if v.child_count:
                self._stmt(v)
        if var is None or body is None:
            return self._stmt(body) if body is not None else None
        name = self._text(var)
        self.dirty = False
        vals = [self._value(v) for v in values]
        if (values and not self.dirty and len(vals) <= _MAX_LOOP_VALUES and self.loop_depth == 0
                and body.end_byte - body.start_byte <= _MAX_LOOP_BODY_BYTES):
            self.loop_depth += 1
            outs = []
            for v in vals:
                self.env[name] = v
                outs.append(self._stmt(body))
            self.loop_depth -= 1
            return _concat(outs)
        self.env.pop(name, None)
        return self._stmt(body)

    # -- command handlers (name -> what it writes or sets) --

    def _h_echo(self, args, stdin, line, text):
        i, newline, escapes = 0, True, False
        while i < len(args) and re.fullmatch(r"-[neE]+", args[i]):
            newline = newline and "n" not in args[i]
            escapes = "e" in args[i] or (escapes and "E" not in args[i])
            i += 1
        body = " ".join(args[i:])
        return _Out((_unescape(body) if escapes else body) + ("\n" if newline else ""), "echo", line)

    def _h_printf(self, args, stdin, line, text):
        if args and args[0] == "-v":
            return None  # printf -v VAR assigns a variable
        if args and args[0] == "--":
            args = args[1:]
        return _Out(_printf(args[0], args[1:]) if args else "", "printf", line)

    def _h_cat(self, args, stdin, line, text):
        files = [a for a in args if not a.startswith("-") or a == "-"]
        if stdin is not None and all(a in _STDIN_NAMES for a in files):
            return stdin
        return None

    def _h_tee(self, args, stdin, line, text):
        opts, files = _parse_opts(args, long_val=("--output-error",))
        append = any(k in ("-a", "--append") for k, _ in opts)
        for f in files:
            self._write(f, "tee-append" if append else "tee", line, stdin)
        return stdin

    def _h_sed(self, args, stdin, line, text):
        inplace = ere = False
        scripts: list[str] = []
        pos: list[str] = []
        i, n = 0, len(args)
        while i < n:
            a = args[i]
            i += 1
            if a == "--":
                pos.extend(args[i:])
                break
            if a.startswith("--"):
                k, eq, v = a.partition("=")
                if k == "--in-place":
                    inplace = True
                elif k == "--regexp-extended":
                    ere = True
                elif k in ("--expression", "--file", "--line-length"):
                    if not eq and i < n:
                        v = args[i]
                        i += 1
                    if k == "--expression":
                        scripts.append(v)
            elif a.startswith("-") and len(a) > 1:
                for j in range(1, len(a)):
                    ch = a[j]
                    if ch == "i":
                        inplace = True
                        if j == len(a) - 1 and i < n and args[i] == "":
                            i += 1  # BSD sed -i ''
                        break
                    if ch in "efl":
                        v = a[j + 1:]
                        if not v and i < n:
                            v = args[i]
                            i += 1
                        if ch == "e":
                            scripts.append(v)
                        break
                    if ch in "Er":
                        ere = True
            else:
                pos.append(a)
        if not scripts and pos:
            scripts.append(pos.pop(0))
        edits = tuple(_sed_edits("\n".join(scripts), ere)) if scripts else ()
        if inplace:
            for f in pos:
                self._write(f, "sed-i", line, _Out(None, "sed", line, edits))
            return None
        return _Out(None, "sed", line, edits) if edits else None

    def _h_perl(self, args, stdin, line, text):
        """``perl -pi -e 's/.../.../' FILE``: the same substitutions as sed, read with ERE groups."""
        inplace = False
        scripts: list[str] = []
        files: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            i += 1
            if a.startswith("-") and len(a) > 1 and not scripts and a != "--":
                inplace = inplace or "i" in a[1:].split("e", 1)[0]
                if a[-1] in "eE" and i < len(args):
                    scripts.append(args[i])
                    i += 1
            elif scripts or a == "--":
                files.extend([a] if a != "--" else [])
        if inplace and scripts:
            script = re.sub(r"\$\{?(\d)\}?", r"\\\1", "\n".join(scripts))  # perl's $1 is sed's \1
            edits = tuple(replace(e, how="perl") for e in _sed_edits(script, True))
            for f in files:
                self._write(f, "perl-i", line, _Out(None, "perl", line, edits))

    def _h_copy(self, args, stdin, line, text, how="cp"):
        opts, pos = _parse_opts(args, "tS", ("--target-directory", "--suffix"))
        target = next((v for k, v in opts if k in ("-t", "--target-directory")), None)
        if target is not None:
            self._write(target, how, line)
        elif len(pos) >= 2:
            self._write(pos[-1], how, line)

    def _h_mv(self, args, stdin, line, text):
        return self._h_copy(args, stdin, line, text, "mv")

    def _h_install(self, args, stdin, line, text):
        opts, pos = _parse_opts(args, "mogtS", ("--mode", "--owner", "--group", "--target-directory",
                                                  "--suffix"))
        keys = {"-m": "mode", "--mode": "mode", "-o": "owner", "--owner": "owner", "-g": "group",
                "--group": "group"}
        if any(k in ("-d", "--directory") for k, _ in opts):
            targets, how = pos, "mkdir"
        else:
            target = next((v for k, v in opts if k in ("-t", "--target-directory")), None)
            targets = [target] if target else pos[-1:] if len(pos) >= 2 else []
            how = "install"
        for t in targets:
            self._write(t, how, line)
            for k, v in opts:
                if k in keys:
                    self._set(keys[k], v, t, "tool:install", line)

    def _h_ln(self, args, stdin, line, text):
        opts, pos = _parse_opts(args, "tS", ("--target-directory", "--suffix"))
        target = next((v for k, v in opts if k in ("-t", "--target-directory")), None)
        if target is not None:
            self._write(target, "ln", line)
        elif len(pos) >= 2:
            self._write(pos[-1], "ln", line)

    def _h_touch(self, args, stdin, line, text):
        for f in _parse_opts(args, "drt", ("--date", "--reference"))[1]:
            self._write(f, "touch", line)

    def _h_mkdir(self, args, stdin, line, text):
        opts, pos = _parse_opts(args, "m", ("--mode", "--context"))
        mode = next((v for k, v in opts if k in ("-m", "--mode")), None)
        for d in pos:
            self._write(d, "mkdir", line)
            if mode:
                self._set("mode", mode, d, "tool:mkdir", line)

    def _h_truncate(self, args, stdin, line, text):
        for f in _parse_opts(args, "sr", ("--size", "--reference"))[1]:
            self._write(f, "truncate", line)

    def _h_dd(self, args, stdin, line, text):
        for a in args:
            if a.startswith("of="):
                self._write(a[3:], "dd", line)

    def _h_curl(self, args, stdin, line, text):
        opts, _ = _parse_opts(args, "odHXuAeTwxrmKEbcF", ("--output", "--data", "--header", "--user",
                                                          "--request", "--url", "--config"))
        for k, v in opts:
            if k in ("-o", "--output"):
                self._write(v, "download", line)

    def _h_wget(self, args, stdin, line, text):
        opts, _ = _parse_opts(args, "OoPetTUaiwQ", ("--output-document", "--output-file", "--user",
                                                     "--password", "--directory-prefix"))
        for k, v in opts:
            if k in ("-O", "--output-document"):
                self._write(v, "download", line)

    def _h_chmod(self, args, stdin, line, text, key="mode", how="tool:chmod"):
        mode_first = bool(args) and key == "mode" and re.fullmatch(r"-[rwxXstugo]+", args[0] or "")
        opts, pos = _parse_opts(args[1:] if mode_first else args, "", ("--reference",))
        if mode_first:
            pos.insert(0, args[0])
        if any(k == "--reference" for k, _ in opts) or len(pos) < 2:
            return
        for f in pos[1:]:
            self._set(key, pos[0], f, how, line)
        return

    def _h_chown(self, args, stdin, line, text):
        return self._h_chmod(args, stdin, line, text, "owner", "tool:chown")

    def _h_chgrp(self, args, stdin, line, text):
        return self._h_chmod(args, stdin, line, text, "group", "tool:chgrp")

    def _h_sysctl(self, args, stdin, line, text):
        opts, pos = _parse_opts(args)
        for p in pos:
            if "=" in p:
                k, _, v = p.partition("=")
                self._set(k.strip(), _clean_value(v), None, "tool:sysctl", line)
        loads = any(k in ("-p", "--load", "-f") for k, _ in opts)
        if loads and stdin is not None and stdin.text and (not pos or any(p in _STDIN_NAMES for p in pos)):
            self._content(stdin.text, None, "tool:sysctl", line)

    def _h_setsebool(self, args, stdin, line, text):
        pos = _parse_opts(args)[1]
        i = 0
        while i < len(pos):
            if "=" in pos[i]:
                k, _, v = pos[i].partition("=")
                self._set(k, v, None, "tool:setsebool", line)
                i += 1
            elif i + 1 < len(pos):
                self._set(pos[i], pos[i + 1], None, "tool:setsebool", line)
                i += 2
            else:
                break

    def _h_semanage(self, args, stdin, line, text):
        if not args:
            return
        obj = args[0]
        opts, pos = _parse_opts(args[1:], "tprsfeSLR", ("--type", "--proto", "--range", "--seuser",
                                                         "--ftype", "--equal", "--store"))
        keys = {k for k, _ in opts}
        removed = bool(keys & {"-d", "--delete"})
        if obj == "boolean" and keys & {"-m", "--modify"}:
            value = "on" if keys & {"--on", "-1"} else "off" if keys & {"--off", "-0"} else ""
            for b in pos:
                self._set(b, value, None, "tool:semanage", line)
        elif obj in ("port", "fcontext"):
            sel = next((v for k, v in opts if k in ("-t", "--type")), "")
            proto = next((v for k, v in opts if k in ("-p", "--proto")), "")
            for p in pos:
                value = f"{proto}/{p}" if obj == "port" and proto else p
                if sel or removed:
                    self._set(sel or p, value, None, "tool:semanage", line, removed=removed)
        return

    def _h_systemctl(self, args, stdin, line, text):
        pos = _parse_opts(args, "tHMpsno", ("--type", "--host", "--machine", "--property", "--signal",
                                             "--lines", "--output", "--root", "--state", "--job-mode"))[1]
        verbs = {"enable": "enabled", "reenable": "enabled", "disable": "disabled", "mask": "masked",
                 "unmask": "unmasked"}
        if not pos:
            return
        if pos[0] in verbs:
            for unit in pos[1:]:
                key = unit.removesuffix(".service")
                self._set(key, verbs[pos[0]], None, "tool:systemctl", line)
        elif pos[0] == "set-default" and len(pos) > 1:
            self._set("default-target", pos[1], None, "tool:systemctl", line)
        return

    def _h_chkconfig(self, args, stdin, line, text):
        pos = _parse_opts(args, "", ("--level",))[1]
        if len(pos) >= 2 and pos[1] in ("on", "off"):
            self._set(pos[0], "enabled" if pos[1] == "on" else "disabled", None, "tool:chkconfig", line)

    def _h_gsettings(self, args, stdin, line, text):
        pos = _parse_opts(args, "", ("--schemadir",))[1]
        if len(pos) >= 4 and pos[0] == "set":
            self._set(f"{pos[1]}.{pos[2]}", _clean_value(" ".join(pos[3:])), None, "tool:gsettings", line)
        elif len(pos) >= 3 and pos[0] == "reset":
            self._set(f"{pos[1]}.{pos[2]}", "", None, "tool:gsettings", line, removed=True)

    def _h_dconf(self, args, stdin, line, text):
        if len(args) >= 3 and args[0] == "write":
            self._set(args[1], _clean_value(" ".join(args[2:])), None, "tool:dconf", line)
        elif len(args) >= 2 and args[0] == "reset":
            self._set(args[-1], "", None, "tool:dconf", line, removed=True)

    def _h_crudini(self, args, stdin, line, text):
        opts, pos = _parse_opts(args, "", ("--format",))
        keys = {k for k, _ in opts}
        if not pos or not keys & {"--set", "--del"}:
            return
        self._write(pos[0], "tool", line)
        if len(pos) >= 3:
            value = " ".join(pos[3:]) if "--set" in keys else ""
            self._set(pos[2], _clean_value(value), pos[0], "tool:crudini", line, pos[1],
                      removed="--del" in keys)
        return

    def _h_git(self, args, stdin, line, text):
        opts, pos = _parse_opts(args, "Cc", ())
        if not pos or pos[0] != "config":
            return
        idx = args.index("config")
        opts, pos = _parse_opts(args[idx + 1:], "f", ("--file", "--type", "--default", "--blob"))
        keys = {k for k, _ in opts}
        file = next((v for k, v in opts if k in ("-f", "--file")), None)
        if file:
            self._write(file, "tool", line)
        if keys & {"--unset", "--unset-all", "--remove-section"} and pos:
            self._set(pos[0], "", file, "tool:git", line, removed=True)
        elif len(pos) >= 2 and not keys & {"--get", "--get-all", "--get-regexp", "-l", "--list"}:
            self._set(pos[0], pos[1], file, "tool:git", line)
        return

    def _h_postconf(self, args, stdin, line, text):
        opts, pos = _parse_opts(args, "cCo", ("--config",))
        keys = {k for k, _ in opts}
        for p in pos:
            if "=" in p:
                k, _, v = p.partition("=")
                self._set(k.strip(), _clean_value(v), None, "tool:postconf", line)
            elif keys & {"-X", "-#"}:
                self._set(p, "", None, "tool:postconf", line, removed=True)

    def _h_crypto(self, args, stdin, line, text):
        opts, _ = _parse_opts(args, "", ("--set",))
        for k, v in opts:
            if k == "--set" and v:
                self._set("crypto-policy", v, None, "tool:update-crypto-policies", line)

    def _h_timedatectl(self, args, stdin, line, text):
        pos = _parse_opts(args, "HM", ("--host", "--machine"))[1]
        keys = {"set-ntp": "ntp", "set-timezone": "timezone", "set-local-rtc": "local-rtc"}
        if len(pos) >= 2 and pos[0] in keys:
            self._set(keys[pos[0]], pos[1], None, "tool:timedatectl", line)

    def _h_hostnamectl(self, args, stdin, line, text):
        pos = _parse_opts(args, "HM", ("--host", "--machine"))[1]
        if len(pos) >= 2 and pos[0] == "set-hostname":
            self._set("hostname", pos[1], None, "tool:hostnamectl", line)

    def _h_ufw(self, args, stdin, line, text):
        pos = _parse_opts(args)[1]
        if len(pos) >= 2 and pos[0] == "default":
            direction = pos[2] if len(pos) >= 3 else "incoming"
            self._set(f"default {direction}", pos[1], None, "tool:ufw", line)
        elif pos and pos[0] in ("enable", "disable"):
            self._set("ufw", pos[0] + "d", None, "tool:ufw", line)
        elif len(pos) >= 2 and pos[0] == "logging":
            self._set("logging", pos[1], None, "tool:ufw", line)

    def _h_firewall_cmd(self, args, stdin, line, text):
        opts, _ = _parse_opts(args, "", ("--set-default-zone",))
        for k, v in opts:
            if k == "--set-default-zone" and v:
                self._set("default-zone", v, None, "tool:firewall-cmd", line)

    def _h_authselect(self, args, stdin, line, text):
        pos = _parse_opts(args)[1]
        if len(pos) >= 2 and pos[0] == "select":
            self._set("authselect profile", " ".join(pos[1:]), None, "tool:authselect", line)
        elif len(pos) >= 2 and pos[0] in ("enable-feature", "disable-feature"):
            self._set("authselect feature", pos[1], None, "tool:authselect", line,
                      removed=pos[0] == "disable-feature")

    def _h_kubectl(self, args, stdin, line, text):
        opts, pos = _parse_opts(args, "fnecl", ("--filename", "--namespace", "--env", "--container",
                                                "--selector", "--context"))
        if pos[:2] == ["set", "env"]:
            pairs = pos[2:] + [v for k, v in opts if k in ("-e", "--env")]
            for p in pairs:
                if "=" in p:
                    k, _, v = p.partition("=")
                    self._set(k, v, None, "tool:kubectl", line)
                elif p.endswith("-") and len(p) > 1:
                    self._set(p[:-1], "", None, "tool:kubectl", line, removed=True)
        elif pos[:1] in (["apply"], ["create"]) and stdin is not None and stdin.text and any(
                k in ("-f", "--filename") and v in _STDIN_NAMES | {""} for k, v in opts):
            # tree-sitter-bash drops a lone '-' before '<<EOF', so a bare -f reads stdin too
            self._content(stdin.text, None, "tool:kubectl", line)

    def _h_docker(self, args, stdin, line, text):
        i = 0
        while i < len(args):
            a = args[i]
            i += 1
            pair = None
            if a in ("-e", "--env") and i < len(args):
                pair, i = args[i], i + 1
            elif a.startswith("--env="):
                pair = a[len("--env="):]
            elif a.startswith("-e") and len(a) > 2 and "=" in a:
                pair = a[2:]
            if pair and "=" in pair:
                k, _, v = pair.partition("=")
                self._set(k, v, None, "tool:env", line)

    def _h_augtool(self, args, stdin, line, text):
        lines = [" ".join(_parse_opts(args, "rIt", ("--root", "--include", "--transform"))[1])]
        if stdin is not None and stdin.text:
            lines += stdin.text.splitlines()
        for cmd in lines:
            m = re.match(r"^\s*set\s+(/files(/\S+?))/([^/\s\[]+)\s+(.+)$", cmd)
            if m:
                file = m.group(2).split("[", 1)[0].rsplit("/", 1)[0] if "[" in m.group(2) else m.group(2)
                self._write(file, "tool", line)
                self._set(m.group(3), _clean_value(m.group(4)), file, "tool:augeas", line)

    def _h_psql(self, args, stdin, line, text):
        return self._sql_client(args, stdin, line, "cfUdhpvPoLTF", ("--command", "--file", "--username",
                                                                     "--dbname", "--host", "--port",
                                                                     "--set", "--variable"))

    def _h_mysql(self, args, stdin, line, text):
        # mysql's -p takes a password only when attached (-pSECRET); a bare -p prompts
        return self._sql_client(args, stdin, line, "euhDPSN", ("--execute", "--user", "--host",
                                                               "--database", "--port", "--socket"))

    def _sql_client(self, args, stdin, line, short_val, long_val):
        opts, _ = _parse_opts(args, short_val, long_val)
        sql = [v for k, v in opts if k in ("-c", "--command", "-e", "--execute")]
        for s in sql:
            for st in _sql_settings(s, line):
                self._set(st.key, st.value, None, "tool:sql", line, removed=st.removed)
        if not sql and not any(k in ("-f", "--file") for k, _ in opts) and stdin is not None and stdin.text:
            self._content(stdin.text, None, "tool:sql", stdin.line)

    def _h_redis(self, args, stdin, line, text):
        lines = [args] + ([ln.split() for ln in stdin.text.splitlines()] if stdin and stdin.text else [])
        for words in lines:
            low = [w.lower() for w in words]
            for j in range(len(low) - 1):
                if low[j] == "config" and low[j + 1] == "set":
                    rest = words[j + 2:]
                    for k in range(0, len(rest) - 1, 2):
                        self._set(rest[k], _clean_value(rest[k + 1]), None, "tool:redis", line)
                    break

    def _h_crontab(self, args, stdin, line, text):
        pos = _parse_opts(args, "u", ())[1]
        if (not pos or pos == ["-"]) and stdin is not None and stdin.text:
            self.sink.writes.append((FileWrite("crontab", "tool", line, stdin.text, self.reach), self.fn))

    # -- commands that run other commands --

    def _h_shell(self, args, stdin, line, text):
        has_c = False
        i = 0
        while i < len(args):
            a = args[i]
            if a in ("-o", "+o", "-O", "+O"):
                i += 2
                continue
            if a.startswith(("-", "+")) and len(a) > 1 and a != "--":
                has_c = has_c or (a[0] == "-" and "c" in a[1:])
                i += 1
                continue
            if a == "--":
                i += 1
            break
        rest = args[i:]
        if has_c and rest:
            self._nested(rest[0], line)
        elif not rest and stdin is not None and stdin.text:
            self._nested(stdin.text, line)  # a script fed on stdin: `bash -s <<EOF`, `echo cmd | sh`

    def _h_su(self, args, stdin, line, text):
        for i, a in enumerate(args):
            if a in ("-c", "--command") and i + 1 < len(args):
                self._nested(args[i + 1], line)
                return
            if a.startswith("--command="):
                self._nested(a[len("--command="):], line)
                return
        return

    def _h_ssh(self, args, stdin, line, text):
        i = 0
        while i < len(args) and args[i].startswith("-") and args[i] != "--":
            i += 2 if _short_takes_next(args[i], "bcDEeFIiJLlmOopQRSWwB") else 1
        if i < len(args) and args[i] == "--":
            i += 1
        if i >= len(args):
            return
        remote = args[i + 1:]  # what follows the host is the remote command, options and all
        inner = _strip_wrappers(list(remote))
        if inner and _base(inner[0]) in _SHELLS and not any(
                a.startswith("-") and "c" in a[1:] for a in inner[1:]):
            if stdin is not None and stdin.text:
                self._nested(stdin.text, line)
        elif remote:
            self._nested(" ".join(remote), line)
        elif stdin is not None and stdin.text:
            self._nested(stdin.text, line)
        return

    def _h_eval(self, args, stdin, line, text):
        self._nested(" ".join(args), line)

    def _h_trap(self, args, stdin, line, text):
        if len(args) >= 2 and args[0] and not args[0].startswith("-"):
            self._nested(args[0], line)

    def _h_find(self, args, stdin, line, text):
        roots = []
        for a in args:
            if a.startswith(("-", "(", "!")):
                break
            roots.append(a)
        name = next((args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-name", "-iname")), None)
        i = 0
        while i < len(args):
            if args[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                j = i + 1
                while j < len(args) and args[j] not in (";", "+"):
                    j += 1
                sub = args[i + 1:j]
                for root in roots or ["."]:
                    path = root.rstrip("/") + "/" + name if name else root
                    if sub:
                        self._run([path if w == "{}" else w for w in sub], None, text, line)
                i = j
            i += 1


_DISPATCH: Final = {
    "program": _Reader._block,
    "compound_statement": _Reader._block,
    "subshell": _Reader._block,
    "do_group": _Reader._block,
    "list": _Reader._list,
    "pipeline": _Reader._pipeline,
    "redirected_statement": _Reader._redirected,
    "command": lambda self, node, stdin: self._command(node, stdin),
    "declaration_command": _Reader._declaration,
    "variable_assignment": _Reader._assign_stmt,
    "variable_assignments": _Reader._assign_stmt,
    "function_definition": _Reader._define,
    "if_statement": _Reader._if,
    "while_statement": _Reader._while,
    "for_statement": _Reader._for,
    "comment": lambda self, node, stdin: None,
}

_HANDLERS: Final = {
    "echo": _Reader._h_echo, "printf": _Reader._h_printf, "cat": _Reader._h_cat, "tee": _Reader._h_tee,
    "sed": _Reader._h_sed, "perl": _Reader._h_perl, "cp": _Reader._h_copy, "mv": _Reader._h_mv,
    "install": _Reader._h_install,
    "ln": _Reader._h_ln, "touch": _Reader._h_touch, "mkdir": _Reader._h_mkdir,
    "truncate": _Reader._h_truncate, "dd": _Reader._h_dd, "curl": _Reader._h_curl,
    "wget": _Reader._h_wget, "chmod": _Reader._h_chmod, "chown": _Reader._h_chown,
    "chgrp": _Reader._h_chgrp, "sysctl": _Reader._h_sysctl, "setsebool": _Reader._h_setsebool,
    "semanage": _Reader._h_semanage, "systemctl": _Reader._h_systemctl, "chkconfig": _Reader._h_chkconfig,
    "gsettings": _Reader._h_gsettings, "dconf": _Reader._h_dconf, "crudini": _Reader._h_crudini,
    "git": _Reader._h_git, "postconf": _Reader._h_postconf,
    "update-crypto-policies": _Reader._h_crypto, "timedatectl": _Reader._h_timedatectl,
    "hostnamectl": _Reader._h_hostnamectl, "ufw": _Reader._h_ufw,
    "firewall-cmd": _Reader._h_firewall_cmd, "authselect": _Reader._h_authselect,
    "kubectl": _Reader._h_kubectl, "docker": _Reader._h_docker, "podman": _Reader._h_docker,
    "augtool": _Reader._h_augtool, "psql": _Reader._h_psql, "mysql": _Reader._h_mysql,
    "mariadb": _Reader._h_mysql, "redis-cli": _Reader._h_redis, "crontab": _Reader._h_crontab,
    "su": _Reader._h_su, "runuser": _Reader._h_su, "ssh": _Reader._h_ssh, "eval": _Reader._h_eval,
    "trap": _Reader._h_trap, "find": _Reader._h_find,
    **{shell: _Reader._h_shell for shell in _SHELLS},
}


def _dq_unescape(text: str) -> str:
    """Inside double quotes a backslash only escapes ``$ ` " \\`` and a newline."""
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _count_errors(root: tree_sitter.Node) -> int:
    count = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            count += 1
        if node.has_error:
            stack.extend(node.children)
    return count


def _bounded(text: str) -> str:
    """The script as read: past :data:`MAX_SCRIPT_CHARS`, its head and tail with the middle blanked
    to its line breaks, so line numbers stay those of the script."""
    if len(text) <= MAX_SCRIPT_CHARS:
        return text
    half = MAX_SCRIPT_CHARS // 2
    head_end = text.rfind("\n", 0, half) + 1 or half
    tail_start = text.find("\n", len(text) - half)
    tail_start = len(text) - half if tail_start < 0 else tail_start
    return text[:head_end] + "\n" * text.count("\n", head_end, tail_start) + text[tail_start:]


def read_script(text: str) -> ScriptFacts:
    """The commands, file writes and settings of a bash script (see the module docstring)."""
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", "replace")
    elif not isinstance(text, str):
        text = str(text)
    src = _bounded(text).replace("\0", " ").encode("utf-8", "replace")
    sink = _Sink(tree_sitter.Parser(_LANGUAGE))
    errors = 0
    try:
        tree = sink.parser.parse(src)
        errors = _count_errors(tree.root_node)
        _Reader(sink, src, {}, None, True, None, 0).read(tree.root_node)
    except Exception:  # noqa: BLE001 - one odd script must not stop a scoring pass; keep what was read
        _LOG.warning("reading a script failed part way", exc_info=True)
    return _finish(sink, errors)


def _finish(sink: _Sink, errors: int) -> ScriptFacts:
    """Settle which functions are ever called, then the reachability of everything found."""
    edges: dict[str | None, set[str]] = {}
    for caller, callee, site in sink.calls:
        if site and callee in sink.defined:
            edges.setdefault(caller, set()).add(callee)
    if sink.dynamic_call:
        called = set(sink.defined)
    else:
        called = set()
        queue = list(edges.get(None, ()))
        while queue:
            f = queue.pop()
            if f not in called:
                called.add(f)
                queue.extend(edges.get(f, ()))

    def live(site: bool, fn: str | None) -> bool:
        return site and (fn is None or fn in called)

    def settle(item, fn):
        reachable = live(item.reachable, fn)
        return item if reachable == item.reachable else replace(item, reachable=reachable)

    commands = [settle(c, c.function) for c in sink.commands]
    writes = [settle(w, fn) for w, fn in sink.writes]
    settings = [settle(s, fn) for s, fn in sink.settings]
    return ScriptFacts(
        commands=sorted(commands, key=lambda c: c.line),
        files_written=sorted(writes, key=lambda w: w.line),
        settings=sorted(settings, key=lambda s: s.line),
        functions={name: name in called for name in sink.defined},
        parse_errors=errors,
    )
