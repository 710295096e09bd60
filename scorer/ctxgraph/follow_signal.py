"""The lexical follow signal: did the script *do* what the tip prescribes, and avoid what it warns against?

A pure leaf module (no SQL, no model). The embedding cosine measures topic: a script about sshd
is close to every sshd tip, whichever direction it took. This signal reads direction instead:

- from the **tip**, the items it prescribes and the items it warns against: commands and their
  options (backticked spans, or a known command word followed by options), paths, settings
  (``Key value`` / ``key = value``, "mode 0440", "owned by root:root", "set Key to N"), bounds
  ("Key to 4 or lower", "at least 15"), services and other technical words. A clause that says "never", "do not", "avoid", "is redundant", the part after
  "instead of" / "rather than" / ", not", puts its items on the warned side; a negation ends at
  the clause (a colon, a semicolon, a dash, a comma before a new imperative). A clause that only
  calls something insufficient ("alone", "only changes", "does not update"), one or a parenthesis
  that only allows another way ("a drop-in is fine", "works as well") and the consequence after
  "so" / "because" / "which" prescribe nothing. Items in a parenthesised list or joined
  by "or" are alternatives: one of them is enough. The order a tip states ("A before B",
  "A, then B", "A first", "After A, B") becomes pairs of steps: items, a checking program or one
  the tip says to run (`named-checkconf`, "running `net-snmp-create-v3-user`"), a service it says
  to stop or start ("Stop `snmpd` before ...", "before starting `usbguard`"), a restart or reload.
  A tip is read up to :data:`MAX_TIP_CHARS`, and at most :data:`MAX_TIP_ITEMS` items a side are kept;
- from the **script**, what its executable lines do: line continuations joined, comments removed,
  code that certainly never runs dropped (the body of ``if false`` or ``while false``, the branches
  after ``if :``, what ``false &&`` skips, everything after an ``exit`` at the top level),
  the text of ``echo``/``printf`` and of logging helpers removed unless it is redirected into a
  file or piped into a command that writes or applies it (then it is file content), heredoc bodies kept as file content unless ``cat`` only prints
  them (usage text), commented-out lines of that content dropped, bodies of functions that are
  never called removed (a trap handler counts as called), simple ``NAME=value`` variables
  expanded; each line is placed where it runs (a function body at its first call), and the
  patterns a grep looks for or a sed replaces are set apart from what the line does;
- **agreement**: each item is looked for in that executable text (options with their case,
  ``-aG`` as ``-a -G``, ``service X restart`` as ``systemctl restart X``, ``install -m`` as
  ``chmod``); a prescribed ``Key value`` the script gives another value, or a value outside a
  bound, is a conflict, an order the script reverses is broken, and so is one whose first step
  only reports its failure (``nginx -t || true``, an ``if !`` that only warns) or, for a service
  to stop first, never comes; which matched is the evidence a reviewer reads, and a few
  numbers summarise it (:class:`Features`). A tip that names nothing specific falls back on its
  content words against the executable lines.

:mod:`ctxgraph.calibration` turns the numbers and the cosine into one calibrated probability.
:data:`SIGNAL_VERSION` names this extraction; stored features and calibrations carry it, and a
change to what this module extracts must change it.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from itertools import pairwise
from typing import Final

__all__ = [
    "FEATURE_NAMES",
    "MAX_SCRIPT_CHARS",
    "MAX_TIP_CHARS",
    "MAX_TIP_ITEMS",
    "SIGNAL_VERSION",
    "Features",
    "Item",
    "ScriptView",
    "TipItems",
    "agreement",
    "bounded_script",
    "bounded_tip",
    "extract_script",
    "extract_tip",
]

SIGNAL_VERSION: Final[str] = "lexical-5"

# The most of a script the signal reads: 256 Ki characters, some 50 times the longest fix script of
# the samples, read in about a second. Reading is linear in size and matching is linear in what was
# kept, so a 26 MB script read whole took minutes per tip; past the cap the signal reads the first
# and the last half of it (cut at line breaks), where set-up and the final restart or check are.
MAX_SCRIPT_CHARS: Final[int] = 256 * 1024
# The most of a tip the signal reads, and the most items it keeps on each side (and in its order
# pairs, all sides together). The samples' longest tip has 354 characters and 10 items to do; matching
# costs items times script lines, so a tip naming thousands of things against a script at the cap
# would take an hour where these bound it to seconds.
MAX_TIP_CHARS: Final[int] = 8 * 1024
MAX_TIP_ITEMS: Final[int] = 32

# Words that run a program or edit a system; a tip naming one outside backticks still names a
# command ("run sshd -T", "reload with systemctl reload sshd").
_COMMANDS: Final[frozenset[str]] = frozenset("""
    apt apt-get augenrules auditctl authselect aide awk certbot chage chattr chgrp chmod chown
    chronyc cp crontab dnf docker dracut faillock find firewall-cmd fips-mode-setup gpasswd grep
    grub2-mkconfig grubby groupadd install journalctl kubectl ln logrotate lvcreate lvextend mkdir
    modprobe mount mv nft nginx openssl passwd pamtester podman psql restorecon rm rpm sed semanage
    service setenforce setsebool sshd ssh ssh-keygen su sudo sysctl systemctl tee timedatectl
    touch tune2fs umask update-crypto-policies useradd usermod visudo yum apachectl mysql
    pg_ctl pg_ctlcluster redis-cli exportfs update-grub chpasswd sestatus getenforce
""".split())

# A clause with one of these warns against what it names.
_NEGATION = re.compile(
    r"\b(never|do not|don't|dont|must not|should not|shouldn't|avoid|avoids|"
    r"not by hand|no need|redundant|unnecessary|not needed|is wrong|are wrong|instead of|rather than|"
    r"needlessly)\b",
    re.IGNORECASE,
)
# A clause that calls something insufficient ("`modprobe -r` alone only unloads it", "does not
# update the boot entries") forbids nothing: a script that follows the tip often does that too,
# and more. Its items are neither prescribed nor warned.
_INSUFFICIENT = re.compile(
    r"\b(alone|not enough|insufficient|does not|doesn't|no longer works?|(?:is|are) (?:lost|gone)|"
    r"only (?:lasts|changes|removes|covers|unloads|affects|applies))\b",
    re.IGNORECASE,
)
# A clause or parenthesis that only allows another way ("(a drop-in under sshd_config.d/ is fine)",
# "a drop-in works as well as editing journald.conf") prescribes nothing: the script that takes
# the main way follows the tip as well.
_OPTIONAL = re.compile(
    r"\b(?:is|are|also) (?:fine|ok|okay|acceptable|allowed)\b|\b(?:also )?works? (?:as well|too|just as well)\b|"
    r"\balso works?\b|\bif you prefer\b|\boptionally\b|\b(?:is|are) optional\b",
    re.IGNORECASE,
)
_OPTIONAL_ASIDE = re.compile(r"\([^()]{0,300}\)")
# The part after these is what is warned against; the part before is prescribed.
_CONTRAST = re.compile(r"\b(instead of|rather than)\b|,\s+not\b(?!\s+even)", re.IGNORECASE)
# Clause boundaries: sentence ends, semicolons, colons, dashes, and a comma that opens a new
# imperative ("To make sure it never starts again, use `systemctl mask`": the "never" stays behind).
# A boundary that starts with blanks starts where they do: tried from each blank of a run, it read
# the rest of the run every time (a tip ending in 40,000 newlines took 50 s).
_CLAUSES = re.compile(
    r"(?<=[.;!?:])\s+|;\s*|(?<!\s)\s+--?\s+|(?<!\s)\s+\u2014\s+|"
    r",\s+(?=(?:and\s+|then\s+)?(?:use|run|set|put|keep|add|enable|"
    r"apply|check|validate|restart|reload|create|write|install|remove|grant|give|make|load|move|verify|"
    r"confirm|mask|edit|change|roll|watch|obtain|finish|end|turn|configure|persist|never|do not|don't|avoid)\b)",
    re.IGNORECASE)

_BACKTICK = re.compile(r"`([^`]+)`")
_PATH = re.compile(r"(?<![\w$}])(/(?:[\w.@+-]+|\*|<[\w-]+>)(?:/(?:[\w.@+-]+|\*|<[\w-]+>))*/?)")
# Key value settings: CamelCase keys (sshd) or snake/lower keys with = (pwquality, auditd, sysctl).
_SETTING_EQ = re.compile(r"(?<![\w.-])([A-Za-z_][\w.-]{0,100})\s*=\s*(-?[\w.%/@:-]+)")
_SETTING_CAMEL = re.compile(r"\b([A-Z][a-z]+(?:[A-Z][a-z0-9]+)+)\s+([\w.,@%/:-]+)")
# The words of a bound, before its value ("at most 4") and after it ("4 or lower"), and a number.
_BOUND_BEFORE = r"at most|at least|no more than|no less than|no fewer than|no higher than|no lower than"
_BOUND_AFTER = r"or (?:lower|less|fewer|below|smaller|under|shorter|higher|more|greater|above|larger|over|longer)"
_NUMBER = r"-?\d+(?:\.\d+)?"
# Prose that sets a key to a value, with a bound or without: "Set `MaxAuthTries` to 4 or lower",
# "set PASS_MAX_DAYS to 60", "raise minlen to at least 15", "set X to no".
_SET_TO = re.compile(
    r"\b(?:set|setting|change|configure|raise|lower|increase|decrease|reduce|limit|cap)\s+"
    r"(?:(?:the|a|an|its|[\w'-]+)\s+){0,3}?"
    r"(?P<tick>`?)(?<![\w.-])(?P<key>[A-Za-z_][\w.-]{0,100}\w)(?P=tick)\s+to\s+"
    rf"(?:(?P<pre>{_BOUND_BEFORE})\s+)?"
    rf"`?(?P<value>{_NUMBER}|[A-Za-z]+)`?"
    r"(?:\s+(?!or\b)[a-z]+)?"
    rf"(?:\s*(?:,\s*)?(?P<post>{_BOUND_AFTER}))?",
    re.IGNORECASE)
# The same bound without a verb: "`PASS_MAX_DAYS` 60 or less", "minlen = 15 or more".
_KEY_BOUND = re.compile(
    rf"(?P<tick>`?)(?<![\w.-])(?P<key>[A-Za-z_][\w.-]{{0,100}}\w)(?P=tick)\s*(?:\s(?:to|of|at)\s+|=\s*|\s)`?(?P<value>{_NUMBER})`?"
    rf"(?:\s+(?!or\b)[a-z]+)?\s*(?:,\s*)?(?P<post>{_BOUND_AFTER})\b",
    re.IGNORECASE)
# The same bound with its word before the value, for a backticked key: "`SystemMaxUse=` of at most
# 500M", "`MaxRetries` no more than 5".
_KEY_PRE_BOUND = re.compile(
    r"`(?P<key>[A-Za-z_][\w.-]{0,100}\w)\s*=?`\s*(?:(?:of|to|at|=|:|is|be)\s+)?"
    rf"(?P<pre>{_BOUND_BEFORE}|up to)\s+"
    rf"`?(?P<value>{_NUMBER}(?:[KMGT]i?B?|B)?)(?!\w|\.\d)`?",
    re.IGNORECASE)
# What a bound compares, on the tip's side and the script's: a number, or a size ("500M", "2GiB",
# "64k") in bytes.
_SIZE = re.compile(rf"({_NUMBER})\s*([KMGT]?)(?:i?B)?", re.IGNORECASE)
_AT_MOST: Final[frozenset[str]] = frozenset({"at most", "no more than", "no higher than", "up to", "lower", "less",
                                             "fewer", "below", "smaller", "under", "shorter"})


def _magnitude(value: str) -> float | None:
    """A value a bound can compare: a plain number, or a size with its unit in bytes (None otherwise)."""
    m = _SIZE.fullmatch(value.strip())
    if not m:
        return None
    unit = m.group(2).upper()
    return float(m.group(1)) * (1024 ** ("KMGT".index(unit) + 1) if unit else 1)
# Words that follow a CamelCase name in prose without being its value ("set ClientAliveInterval to").
_NOT_VALUES: Final[frozenset[str]] = frozenset({"to", "is", "in", "and", "or", "for", "from", "with", "at", "of",
                                               "the", "a", "an", "as", "be", "by"})
_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
_WORD = re.compile(r"[A-Za-z0-9_][\w.@+:-]*")
# Words too common in prose or scripts to say anything on their own.
_STOP: Final[frozenset[str]] = frozenset("""
    a an and are as at be before by can do does each every file files first for from have if in
    into is it its line lines make not of on one only or set so that the then this to use with
    you your yes no true false all any value values new old run check sure when where which while
    after also must should never don't other same than instead rather etc e.g i.e via per
    config configuration settings setting change changes fix host system service services
""".split())


@dataclass(frozen=True)
class Item:
    """One thing a tip names: ``kind`` is command, path, setting, bound ("Key <= N": any value on
    that side keeps it), option or word. Items that share
    a ``group`` are alternatives ("`sshd -T`, `sysctl -n`, ...", "`lvextend -r` (`--resizefs`)"):
    the script needs one of them."""

    kind: str
    text: str
    group: int = -1


@dataclass
class TipItems:
    """What a tip prescribes, what it warns against, and the order it states: each pair in
    ``order`` says the first list's items must run before the second's."""

    prescribed: list[Item] = field(default_factory=list)
    warned: list[Item] = field(default_factory=list)
    order: list[tuple[list[Item], list[Item]]] = field(default_factory=list)
    prose: list[str] = field(default_factory=list)


@dataclass
class ScriptView:
    """What a script's executable lines do, as text to search (one logical line per entry).

    ``checks`` flags the lines that only read (grep, test, awk, diff, ...): a setting or path found
    only there was looked at, not written, and counts half. ``writes`` flags the lines that change
    a file (a redirect into it, sed -i, tee, cp, mv, install, ln, heredoc bodies): a path a tip warns
    against counts only there, since reading a file is not editing it. ``actions`` is each line
    without what it only looks for (grep patterns, the pattern half of a sed substitution), and
    ``order`` where it runs, as a sort key (a function body at its first call)."""

    lines: list[str]
    checks: list[bool]
    writes: list[bool]
    text: str
    words: frozenset[str]
    commands: frozenset[str]
    actions: list[str] = field(default_factory=list)
    order: list[tuple[int, ...]] = field(default_factory=list)
    capped: bool = False  # the script was longer than the cap: only its head and tail were read
    # Per line: a command whose failure the script only reports (``|| true``, ``|| echo``, an
    # ``if !`` block that only warns), so it cannot stop what comes after it.
    ignored: list[bool] = field(default_factory=list)
    # Each line as every item is matched against it (:func:`_spelled_lines`), worked out once per view
    # rather than once per item and line.
    _spelled: dict[bool, list[tuple[str, str]]] = field(default_factory=dict, init=False, repr=False,
                                                        compare=False)
    _runs: dict[bool, list[set[str]]] = field(default_factory=dict, init=False, repr=False, compare=False)


# --- the tip ----------------------------------------------------------------------------------


# A clause's consequence ("..., so a re-run never duplicates lines") has its own polarity: a
# "never" there describes what the advice prevents, not what it forbids.
_CONSEQUENCE = re.compile(r",?(?<!\s)\s+\b(?:so that|so|otherwise|because|since|or else|or the next|which)\b\s+",
                          re.IGNORECASE)
_NEEDLESS = re.compile(r"\b(redundant|unnecessary|not needed|no need|needlessly)\b", re.IGNORECASE)
_UNLESS = re.compile(r"\bunless\b", re.IGNORECASE)
_PROTECTED = re.compile("\x00(\\d+)\x00")
# The warned phrase after "instead of" / "rather than" ends at a comma, a parenthesis or "and".
_PHRASE_END = re.compile(r"[,(]|\band\b|\bso\b")


def _clauses(text: str) -> list[tuple[str, bool]]:
    """Split a tip into clauses, each with whether it warns (True) or prescribes (False).

    Backticked spans are set aside first, so a ``;`` or ``:`` inside code never splits a clause.
    What follows "so", "because", "which" describes a consequence, not advice, and is dropped up
    to the next clause; before "unless" is a condition, after it the advice."""
    spans: list[str] = []

    def protect(m: re.Match) -> str:
        spans.append(m.group(0))
        return f"\x00{len(spans) - 1}\x00"

    def restore(part: str) -> str:
        return _PROTECTED.sub(lambda m: spans[int(m.group(1))], part)

    out: list[tuple[str, bool]] = []
    protected = _OPTIONAL_ASIDE.sub(lambda m: " " if _OPTIONAL.search(m.group(0)) else m.group(0),
                                    _BACKTICK.sub(protect, text))
    for sentence in _CLAUSES.split(protected):
        if not sentence or not sentence.strip():
            continue
        sentence = restore(sentence)
        if _OPTIONAL.search(sentence) and not _NEGATION.search(sentence):
            continue
        unless = _UNLESS.search(sentence)
        if unless:
            out.append((sentence[unless.end():], False))
            continue
        for position, clause in enumerate(_CONSEQUENCE.split(sentence)):
            if position > 0:
                # "..., so a separate `sshd -t` is redundant": a consequence that calls a step
                # needless warns against it; any other consequence ("so a re-run never duplicates
                # lines") describes what the advice achieves.
                if _NEEDLESS.search(clause):
                    out.append((clause, True))
                continue
            contrast = _CONTRAST.search(clause)
            if contrast:
                before, after = clause[: contrast.start()], clause[contrast.end():]
                end = _PHRASE_END.search(after)
                warned, rest = (after[: end.start()], after[end.start():]) if end else (after, "")
                polarity = bool(_NEGATION.search(before))
                out.append((before, polarity))
                out.append((warned, True))
                if rest.strip():
                    out.append((rest, polarity))
            elif not _INSUFFICIENT.search(clause) or _NEGATION.search(clause):
                out.append((clause, bool(_NEGATION.search(clause))))
    return out


def _set_to_items(clause: str) -> list[Item]:
    """"Set `Key` to N or lower" and its kin: a setting with its value ("Key N"), or a bound
    ("Key <= N", "Key >= N") the script's value is compared with. The key must look like one
    (backticked, or a name with ``_``, ``.``, digits or inner capitals): "set the timeout to 600"
    names no key."""
    items = []
    for m in [*_SET_TO.finditer(clause), *_KEY_BOUND.finditer(clause), *_KEY_PRE_BOUND.finditer(clause)]:
        key, value = m.group("key"), m.group("value")
        coded = clause[m.start("key") - 1 : m.start("key")] == "`" or "=" in m.group(0)
        if not coded and (key.lower() in _COMMANDS
                          or not re.search(r"[_.]|[A-Z]{2}|[A-Z]\w*[a-z][A-Z]|[a-z][A-Z]", key)):
            continue
        number = _magnitude(value) is not None
        bound = ((m.groupdict().get("pre") or "") or (m.groupdict().get("post") or "").removeprefix("or ")).lower()
        if bound and number:
            items.append(Item("bound", f"{key} {'<=' if bound in _AT_MOST else '>='} {value}"))
        elif re.match(r"`?\s*(?:/|(?:,\s*)?\bor\b)", clause[m.end("value"):]):
            continue    # "to 1 or 2", "to yes/no": alternatives, not the one value the script must give
        elif number or value.lower() in _WORD_VALUES:
            items.append(Item("setting", f"{key} {value}"))
    return items


def _items_of(clause: str) -> list[Item]:
    items = _items_and_bounds(clause)
    # A key with a bound is not also held to the bound's own value ("minlen = 15 or more": 16 keeps it).
    bounded = {i.text.split()[0].lower() for i in items if i.kind == "bound"}
    return [i for i in items if not (i.kind == "setting" and len(i.text.split()) == 2
                                     and i.text.split()[0].lower() in bounded)]


def _items_and_bounds(clause: str) -> list[Item]:
    items: list[Item] = _set_to_items(clause)
    # "owned by `a:b`", "mode `0600`": the backticked value is the owner or mode setting too.
    for value in re.findall(r"\bowned by\s+`([\w-]+:[\w-]+)`", clause, re.IGNORECASE):
        items.append(Item("setting", f"owner {value}"))
    for value in re.findall(r"\bmode\s+`(0?[0-7]{3,4})`", clause, re.IGNORECASE):
        items.append(Item("setting", f"mode {value}"))
    rest = clause
    for span in _BACKTICK.findall(clause):
        items.extend(_items_of_code(span.strip()))
    rest = _BACKTICK.sub(" ", rest)
    for path in _PATH.findall(rest):
        if len(path) > 2:
            items.append(Item("path", path.rstrip("/.")))
    rest = _PATH.sub(" ", rest)
    for key, value in _SETTING_EQ.findall(rest):
        items.append(Item("setting", f"{key} {value}"))
    # File modes and owners, however the script sets them (chmod, install -m, mkdir -m, chown).
    for value in re.findall(r"\bmode\s+(0?[0-7]{3,4})\b", rest, re.IGNORECASE):
        items.append(Item("setting", f"mode {value}"))
    for value in re.findall(r"\bowned by\s+([\w-]+:[\w-]+)", rest, re.IGNORECASE):
        items.append(Item("setting", f"owner {value}"))
    for key, value in _SETTING_CAMEL.findall(rest):
        if value.lower() not in _NOT_VALUES:
            items.append(Item("setting", f"{key} {value}"))
    tokens = rest.replace("(", " ").replace(")", " ").replace(",", " ").split()
    for i, token in enumerate(tokens):
        word = token.strip(".:;'\"")
        if word in _COMMANDS:
            # A command word followed by its options: "sshd -T", "systemctl reload sshd".
            tail = []
            for nxt in tokens[i + 1 : i + 4]:
                nxt = nxt.strip(".:;'\"")
                if nxt.startswith("-") or (word in {"systemctl", "service", "authselect", "firewall-cmd",
                                                    "update-crypto-policies", "faillock", "sysctl"}
                                          and re.fullmatch(r"[\w.@-]+", nxt) and nxt.lower() not in _STOP):
                    tail.append(nxt)
                else:
                    break
            items.append(Item("command" if tail else "word", " ".join([word, *tail])))
    for word in _WORD.findall(rest):
        word = word.rstrip(".:-")
        if _technical(word):
            items.append(Item("word", word))
    return _dedupe(items)


def _items_of_code(code: str) -> list[Item]:
    """A backticked span: a command line, a setting, a path or a single technical word."""
    items: list[Item] = []
    for path in _PATH.findall(code):
        if len(path) > 2:
            items.append(Item("path", path.rstrip("/.")))
    first = code.split()[0] if code.split() else ""
    if first in _COMMANDS or (len(code.split()) > 1 and code.split()[1].startswith("-")):
        items.append(Item("command", _PATH.sub(lambda m: m.group(0), code)))
    elif m := re.fullmatch(r"([A-Za-z_][\w.-]*)(?:\s*=\s*|\s+)(\S.*)", code):
        items.append(Item("setting", f"{m.group(1)} {m.group(2)}"))
    elif code.startswith("-") and len(code.split()) > 1:
        items.append(Item("setting", code))     # a rule or option line: -a always,exit -F ...
    elif code and not _PATH.fullmatch(code):
        items.append(Item("word" if len(code.split()) == 1 else "setting", code))
    return items


def _technical(word: str) -> bool:
    """A word that names something in a script rather than in prose."""
    low = word.lower()
    if low in _STOP or len(word) < 3:
        return False
    return bool(re.search(r"[_.@-]|\d", word[1:]) or re.search(r"[a-z][A-Z]", word) or word in _COMMANDS)


def _dedupe(items: list[Item]) -> list[Item]:
    seen: set[tuple[str, str]] = set()
    out = []
    for item in items:
        key = (item.kind, item.text.lower())
        if key not in seen and item.text:
            seen.add(key)
            out.append(item)
    return out


_PARENTHESIS = re.compile(r"(\x00\d+\x00\s*)?\(([^()]*)\)")


def _grouped_items(clause: str, groups: list[int]) -> list[Item]:
    """A clause's items, those of a parenthesised list of alternatives sharing one group: a
    parenthesis holding a comma or "or", or one right after a code span (another spelling of it)."""
    spans: list[str] = []

    def protect(m: re.Match) -> str:
        spans.append(m.group(0))
        return f"\x00{len(spans) - 1}\x00"

    def restore(part: str) -> str:
        return _PROTECTED.sub(lambda m: spans[int(m.group(1))], part)

    items: list[Item] = []

    def alternatives(m: re.Match) -> str:
        inner = m.group(2)
        if "," in inner or re.search(r"\bor\b", inner) or m.group(1):
            groups.append(len(groups))
            found = _items_of(restore((m.group(1) or "") + " " + inner))
            items.extend(Item(i.kind, i.text, groups[-1]) for i in found)
            return " "
        return m.group(0)

    def joined_by_or(m: re.Match) -> str:
        if m.group("alternative") is None:
            return m.group(0)
        groups.append(len(groups))
        items.extend(Item(i.kind, i.text, groups[-1]) for i in _items_of(restore(m.group(0))))
        return " "

    rest = _PARENTHESIS.sub(alternatives, _BACKTICK.sub(protect, clause))
    # Code spans joined by "or" ("`SELECT pg_reload_conf()` or `pg_ctlcluster ... reload`").
    rest = _SPAN_LIST.sub(joined_by_or, rest)
    return _items_of(restore(rest)) + items


# A list of code spans, read whole: one joined by "or" at its end is a list of alternatives. Matching
# only lists that end in "or" tried again from each span of a list that does not (quadratic in it).
_SPAN_LIST = re.compile(r"\x00\d+\x00(?:\s*,\s*\x00\d+\x00)*"
                        r"(?P<alternative>\s*(?:,\s*)?\bor\b\s*\x00\d+\x00)?")


def bounded_tip(text: str, limit: int | None = None) -> str:
    """The part of a tip the signal reads: the whole tip up to ``limit`` characters
    (:data:`MAX_TIP_CHARS` by default), else its head cut back to the last blank in the cap's second
    half (so no word is cut in two); NUL characters read as blanks, since the reader marks the code
    spans it sets aside with them."""
    limit = MAX_TIP_CHARS if limit is None else limit
    if len(text) > limit:
        cut = max(text.rfind(" ", limit // 2, limit + 1), text.rfind("\n", limit // 2, limit + 1))
        text = text[: cut if cut > 0 else limit]
    return text.replace("\x00", " ")


def extract_tip(text: str) -> TipItems:
    """The items a tip prescribes and the ones it warns against (an item on both sides is warned),
    read from :func:`bounded_tip`: at most :data:`MAX_TIP_ITEMS` on each side, the first ones, and
    order pairs naming that many items in all."""
    text = bounded_tip(text)
    tip = TipItems()
    groups: list[int] = []
    for clause, warns in _clauses(text):
        (tip.warned if warns else tip.prescribed).extend(_grouped_items(clause, groups))
    # A bound says which values are right; on the warned side ("never raise X to 6 or more") it
    # would take the key's mere presence for the warned act.
    tip.warned = [i for i in _dedupe(tip.warned) if i.kind != "bound"]
    warned = {(i.kind, i.text.lower()) for i in tip.warned}
    tip.prescribed = [i for i in _dedupe(tip.prescribed) if (i.kind, i.text.lower()) not in warned]
    tip.prescribed, tip.warned = tip.prescribed[:MAX_TIP_ITEMS], tip.warned[:MAX_TIP_ITEMS]
    tip.order = _order_pairs(text, warned)
    tip.prose = sorted(_prose_words(text))
    return tip


# Order words. "A before B", "A, then B", "A first and ... B", "After A, B" and "B after A".
_THEN = re.compile(r",?(?:(?<!\s)\s+)?\b(?:and\s+)?(?:only\s+)?then\b", re.IGNORECASE)
_BEFORE = re.compile(r"\bbefore\b", re.IGNORECASE)
_AFTER = re.compile(r"\bafter\b", re.IGNORECASE)
_FIRST = re.compile(r"\bfirst\b", re.IGNORECASE)
# Verbs that apply a change, named in prose ("before reloading sshd", "only then restart it").
_APPLY_VERB = re.compile(r"\b(restart|restarting|reload|reloading|restarts|reloads)\b", re.IGNORECASE)
_ORDER_KINDS: Final[frozenset[str]] = frozenset({"command", "path", "setting", "bound"})
# A program a tip names alone (`named-checkconf`, `unbound-checkconf`) is a plain word to the
# extractor; one whose name says it checks is a step an order can name.
_PROGRAM_NAME = re.compile(r"[a-z][\w.-]*")
_CHECKING_PART = re.compile(r"check|test|verify|validate|lint")


def _validator_word(word: str) -> bool:
    """Whether a word names a checking program: a program name with check, test, verify, validate or
    lint after its first letter, or ending in -t, -c or -n. Read in two linear scans: as one pattern
    with the part in the middle, a long name of many parts was rescanned from each of them."""
    if not _PROGRAM_NAME.fullmatch(word):
        return False
    return _CHECKING_PART.search(word, 1) is not None or (len(word) > 2 and word[-2] == "-"
                                                          and word[-1] in "tcn")


# A service started or stopped as a step ("Stop `snmpd` before ...", "before starting or enabling
# `usbguard`"): the verb opens the step; its class and the service named after it ("it", "the
# service": any). "or" and "and" join verbs as words: inside a word, each could also be read as a
# joint, 2**n ways to fail on a word of n of them.
_SERVICE_STEP = re.compile(
    r"^\s*(?:(?:you|first|then|only|and)\s+)*(stop|stopping|start|starting|enable|enabling)\b"
    r"((?:\s*(?:,|\bor\b|\band\b)\s*\w+)*)"
    r"\s+(?:the\s+)?`?([\w@.-]+)`?",
    re.IGNORECASE)
_ANY_SERVICE: Final[frozenset[str]] = frozenset({"it", "them", "service", "services", "daemon", "unit", "the"})
# A program the tip tells to run ("before running `net-snmp-create-v3-user`", "with `mongosh`").
_RUN_WORD = re.compile(r"\b(?:run|running|execute|executing|invoke|invoking|call|calling|with|using)\s+`([\w.-]+)`",
                       re.IGNORECASE)


def _service_step(text: str) -> Item | None:
    """A start or stop step a side of an order names, as a "service" item ("stop snmpd"; the name
    empty when the tip says "it")."""
    m = _SERVICE_STEP.match(text)
    if not m:
        return None
    verb = "stop" if m.group(1).lower().startswith("stop") else "start"
    name = m.group(3).lower().strip(".")
    if "_" in name:
        return None  # an option enabled (even_deny_root), not a unit: units are named with hyphens
    return Item("service", f"{verb} {'' if name in _ANY_SERVICE or name in _STOP else name}".strip())


def _order_side(text: str, warned: set[tuple[str, str]]) -> list[Item]:
    """The items one side of an order word names: its commands, paths (two levels or more) and
    settings, a checking program or one the tip says to run; else the service it starts or stops
    ("Stop `snmpd` before ..."), else the apply verb it uses ("before reloading sshd")."""
    run = {w.lower() for w in _RUN_WORD.findall(text)}
    items = [i for i in _items_of(text) if (i.kind, i.text.lower()) not in warned
             and (i.kind in _ORDER_KINDS
                  or (i.kind == "word" and (_validator_word(i.text) or i.text.lower() in run)))
             and not (i.kind == "path" and i.text.strip("/").count("/") < 1)]
    if items:
        return items
    if (service := _service_step(text)) is not None:
        return [service]
    return [Item("apply", "restart or reload")] if _APPLY_VERB.search(text) else []


def _steps(sentence: str) -> list[str]:
    """A sentence cut into the steps it orders, earliest first (see the order words above).

    Read in one pass whatever the length of its chains ("After A, after B, ...", "Before B, before
    C, ..."): each link is read where it stands, never by copying the rest of the sentence, and a
    stack of what is left to read takes the place of recursion (which a chain of a thousand links
    overflowed)."""
    steps: list[str] = []
    # What is left, last first: ("read", text, start) reads text[start:] stripped; ("step", text)
    # is a step already cut.
    todo: list[tuple[str, str, int]] = [("read", sentence, 0)]
    # Per text read: where it ends once stripped, and where its last "then" starts (-1: none).
    bounds: dict[str, tuple[int, int]] = {}
    while todo:
        what, text, start = todo.pop()
        if what == "step":
            steps.append(text)
            continue
        if text not in bounds:
            last = max((m.start() for m in _THEN_WORD_AT.finditer(text)), default=-1)
            bounds[text] = (len(text.rstrip()), last)
        end, last_then = bounds[text]
        while start < end and text[start].isspace():
            start += 1
        if (after := _AFTER.match(text, start, end)) and (comma := text.find(",", start, end)) >= 0:
            todo += [("read", text, comma + 1), ("step", text[after.end():comma], 0)]
            continue
        if last_then >= start:
            todo += [("read", part, 0) for part in reversed(_THEN.split(text[start:end]))]
            continue
        before = _BEFORE.search(text, start, end)
        if before and not text[start:before.start()].strip() \
                and (comma := text.find(",", before.end(), end)) >= 0:
            # "Before B, A": A first.
            todo += [("step", text[before.end():comma], 0), ("read", text, comma + 1)]
            continue
        steps += _cut_steps(text[start:end])
    return steps


# Where "then" stands as a word: a sentence holds an order word "then" exactly where this matches.
_THEN_WORD_AT = re.compile(r"\bthen\b", re.IGNORECASE)


def _cut_steps(sentence: str) -> list[str]:
    """The steps of a stripped sentence with no "then" and no chain left to follow."""
    if before := _BEFORE.search(sentence):
        left, right = sentence[: before.start()], sentence[before.end():]
        # The nearest step on each side: "set X, and run `sshd -t` before reloading, ..."
        left = re.split(r",\s+(?:and\s+)?", left)[-1]
        if "(" in right and not re.search(r"\x00|/", left):
            # "Validate the configuration before you restart it (`sshd -t`, `visudo -c`, ...)":
            # the parenthesis names the examples of the step before.
            spans = _parenthesised(right)
            outside, position = [], 0
            for opening, closing in spans:
                outside += [right[position:opening], " "]
                position = closing + 1
            outside.append(right[position:])
            return [" ".join(right[a + 1 : b] for a, b in spans), "".join(outside).split(",", 1)[0]]
        right = right.split(",", 1)[0]
        return [left, right]
    if (after := _AFTER.search(sentence)) and after.start() > 0:
        # "Run `X` after editing the file and only restart if it passes": the step "after" names ends
        # at the next comma or "and"; what follows is another step, not the earlier one.
        return [re.split(r",|(?<!\s)\s+and\s+", sentence[after.end():], maxsplit=1)[0],
                re.split(r",\s+(?:and\s+)?", sentence[: after.start()])[-1]]
    if first := _FIRST.search(sentence):
        return [sentence[: first.end()], sentence[first.end():]]
    return [sentence]


def _parenthesised(text: str) -> list[tuple[int, int]]:
    """Where each parenthesis opens and closes, left to right, as ``\\(([^)]*)\\)`` finds them: from
    an opening one to the first closing one after it. Found by two scans of the text, where the
    pattern, tried from each of many opening parentheses never closed, read the rest each time."""
    spans = []
    position = 0
    while (opening := text.find("(", position)) >= 0 and (closing := text.find(")", opening + 1)) >= 0:
        spans.append((opening, closing))
        position = closing + 1
    return spans


def _order_pairs(text: str, warned: set[tuple[str, str]]) -> list[tuple[list[Item], list[Item]]]:
    """The orders a tip states, earliest first, as long as they name at most :data:`MAX_TIP_ITEMS`
    items in all."""
    spans: list[str] = []

    def protect(m: re.Match) -> str:
        spans.append(m.group(0))
        return f"\x00{len(spans) - 1}\x00"

    def restore(part: str) -> str:
        return _PROTECTED.sub(lambda m: spans[int(m.group(1))], part)

    pairs: list[tuple[list[Item], list[Item]]] = []
    named = 0
    for sentence in re.split(r"(?<=[.;!?])\s+|;\s*|:\s+", _BACKTICK.sub(protect, text)):
        sentence = _CONSEQUENCE.split(sentence)[0]
        if not _NEGATION.search(sentence) or _THEN.search(sentence) or _BEFORE.search(sentence):
            sides = [_order_side(restore(step), warned) for step in _steps(sentence)]
            sides = [side for side in sides if side]
            for earlier, later in pairwise(sides):
                if {i.text for i in earlier} != {i.text for i in later}:
                    named += len(earlier) + len(later)
                    if named > MAX_TIP_ITEMS:
                        return pairs
                    pairs.append((earlier, later))
    return pairs


# --- the script -------------------------------------------------------------------------------

_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_]\w*)\1")
# Blanks around an optional brace are read as one run: as two, a line of a definition and many
# blanks was split between them every way before failing.
_FUNC_DEF = re.compile(r"^\s*(?:function\s+)?([A-Za-z_][\w:-]*)\s*\(\s*\)\s*(?:\{\s*)?$"
                       r"|^\s*function\s+([A-Za-z_][\w:-]*)\s*(?:\{\s*)?$")
_ONE_LINE_FUNC = re.compile(r"^\s*(?:function\s+)?([A-Za-z_][\w:-]*)\s*\(\s*\)\s*\{(.*)\}\s*(?:;\s*)?$")
_ASSIGN = re.compile(r"^\s*(?:readonly\s+|export\s+|declare\s+(?:-\w+\s+)?|local\s+)?([A-Za-z_]\w*)=(\"[^\"$`]*\"|'[^']*'|[^\s;\"'$`]+)\s*$")
_MESSAGE_CMDS: Final[frozenset[str]] = frozenset({"echo", "printf"})
_LOGGER = re.compile(r"^(log|logger|warn|warning|die|fail|info|msg|message|note|say|error|err|debug|notice|step|banner|usage|ok)(_\w+)?$", re.IGNORECASE)
_FILE_REDIRECT = re.compile(r">>?\s*(?!&|/dev/(?:null|stderr|stdout|tty))(\S+)")


def _unquoted(line: str) -> Iterator[tuple[int, str, str]]:
    """Each character of a line outside quotes: its index, itself and the character before it."""
    quote = None
    prev = " "
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        else:
            yield i, ch, prev
        prev = ch


def _comment_start(line: str, quote: str | None = None) -> tuple[int, str | None]:
    """Where a shell comment starts in a line (-1: none), a # that starts a word outside quotes, and
    the quote still open where the reading stops; ``quote`` is the one open where the line starts
    (a continuation inside a quoted string), after a blank."""
    prev = " "
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (prev.isspace() or prev in ";&|("):
            return i, None
        prev = ch
    return -1, quote


def _join_piece(pieces: list[str], text: str) -> None:
    """Add ``text`` to a logical line being joined: its trailing blanks and backslashes one
    character each, so a blank line after the line can take one off without copying the rest."""
    end = len(text)
    while end and (text[end - 1].isspace() or text[end - 1] == "\\"):
        end -= 1
    if end:
        pieces.append(text[:end])
    pieces.extend(text[end:])


def _logical_lines(script: str, doubtful: set[int] | None = None) -> list[tuple[str, bool]]:
    """Logical lines (continuations joined) as (text, is_file_content); ``doubtful``, when given,
    gets the index of each line opening a heredoc whose body ends where the shell's would not (an
    indented or padded end marker that bash reads as more of the body).

    Each physical line is read once: the logical line being joined is kept in pieces, with the
    quote open at its end, so a continued line is read from where the last one stopped. Reading the
    whole logical line again at each continuation made a script of continued lines quadratic (128
    KiB of ``a \\`` lines took 90 s). What it joins is what that reading joined: the next line
    without its leading blanks after one blank, comments cut, a line ending in a backslash continued
    (a blank line only takes that backslash off, and a logical line of nothing but it is dropped)."""
    raw = script.replace("\r\n", "\n").split("\n")
    out: list[tuple[str, bool]] = []
    i = 0
    pending: list[str] = []  # the logical line joined so far (see _join_piece)
    quote: str | None = None  # the quote open at its end
    while i < len(raw):
        line = raw[i]
        i += 1
        if pending:
            line = line.lstrip()
            cut, open_quote = _comment_start(line, quote)
            line = line if cut < 0 else line[:cut]
            tail = line.rstrip()
            if tail.endswith("\\"):
                pending.append(" ")
                _join_piece(pending, tail[:-1])
                quote = open_quote
                continue
            if not tail:
                # Nothing but blanks: the logical line goes on if it ends in a backslash itself.
                kept = len(pending)
                while kept and pending[kept - 1].isspace():
                    kept -= 1
                if kept and pending[kept - 1] == "\\":
                    del pending[kept - 1 :]
                    continue
            code = "".join(pending) + " " + line
            pending = []
        else:
            cut, quote = _comment_start(line)
            code = line if cut < 0 else line[:cut]
            tail = code.rstrip()
            if tail.endswith("\\"):
                _join_piece(pending, tail[:-1])
                continue
        out.append((code, False))
        heredoc = _HEREDOC.search(code)
        if heredoc:
            end = heredoc.group(2)
            # A heredoc that cat prints to the terminal (usage text, a closing hint) is a message;
            # one redirected, piped or fed to a program is file content or input.
            message = _heredoc_is_message(code)
            opened = len(out) - 1
            while i < len(raw) and raw[i].strip() != end:
                if not message and not _CONFIG_COMMENT.match(raw[i]):
                    out.append((raw[i], True))
                i += 1
            if doubtful is not None and i < len(raw) and \
                    (raw[i].lstrip("\t") if heredoc.group(0).startswith("<<-") else raw[i]) != end:
                doubtful.add(opened)
            i += 1
    if pending:
        out.append(("".join(pending), False))
    return out


# A commented-out line inside written file content does nothing in sshd_config, redis.conf, my.cnf...
_CONFIG_COMMENT = re.compile(r"^\s*(?:#(?!include|!)|;)")


def _heredoc_is_message(line: str) -> bool:
    """A heredoc that cat (or a logging helper) prints without a pipe or a redirect into a file."""
    head = line.split("<<", 1)[0].split()
    if "|" in line or _FILE_REDIRECT.search(line):
        return False
    return bool(head) and (head[0] == "cat" or bool(_LOGGER.match(head[0])))


# Commands that only report: a failure branch made of these lets the script go on.
_REPORTING: Final[frozenset[str]] = frozenset({
    "echo", "printf", "logger", "true", ":", "wall", "mail", "mailx", "systemd-cat",
})
# Helpers that stop the script by convention, when their body is not in the script to look at.
_STOPPING_NAMES = re.compile(r"^(die|fail|fatal|abort|bail|panic)(_\w+)?$", re.IGNORECASE)
_STOPS = re.compile(r"(?<![\w$-])(?:exit|return|false|kill|abort)(?![\w-])")
_IF_NOT = re.compile(r"^\s*if\s+!\s")
_THEN_WORD = re.compile(r";\s*then\s+")


def _one_line_if_not(text: str) -> str | None:
    """The then-branch of ``if ! X; then Y; fi`` written on one line (None for any other line)."""
    if not _IF_NOT.match(text) or not (then := _THEN_WORD.search(text)):
        return None
    rest = text[then.end():].rstrip().rstrip(";").rstrip()
    return rest[:-2] if rest == "fi" or rest.endswith((" fi", ";fi")) else None


def _top_level_or(line: str) -> int:
    """Where the first ``||`` outside quotes starts (-1 if none)."""
    for i, ch, _ in _unquoted(line):
        if ch == "|" and line.startswith("||", i):
            return i
    return -1


def _only_reports(segment: str, functions: dict[str, tuple[int, int]], stops_in: list[int]) -> bool:
    """Whether every command of a piece of a line only reports (echo, logger, a logging helper
    whose body does not exit): nothing in it stops the script or undoes anything."""
    if _STOPS.search(segment):
        return False
    for command in re.split(r"&&|\|\||;|\|", segment):
        words = command.replace("{", " ").replace("}", " ").split()
        if not words or words[0] in _REPORTING:
            continue
        head = words[0]
        span = functions.get(head)
        if span is not None:
            if stops_in[span[1] + 1] - stops_in[span[0]] == 0 and _LOGGER.match(head):
                continue  # a logging helper of the script's own that never exits
            return False
        if _LOGGER.match(head) and not _STOPPING_NAMES.match(head):
            continue
        return False
    return True


def _ignored_failures(lines: list[tuple[str, bool]], functions: dict[str, tuple[int, int]]) -> list[bool]:
    """Per logical line, whether the command it runs may fail without stopping anything: its ``||``
    branch only reports (``nginx -t || true``, ``|| echo warn``, a ``|| { ... }`` group of
    messages), or it opens an ``if !`` whose then-branch only reports. One pass, so a script of
    many unclosed blocks stays linear."""
    n = len(lines)
    stops_in = [0] * (n + 1)
    for i, (text, content) in enumerate(lines):
        stops_in[i + 1] = stops_in[i] + (not content and _STOPS.search(text) is not None)
    reports = [not content and _only_reports(text, functions, stops_in) for text, content in lines]
    reports_before = [0] * (n + 1)
    for i, flag in enumerate(reports):
        reports_before[i + 1] = reports_before[i] + flag
    # The next line (at or after i) that closes a brace group, for ``|| {`` groups.
    next_close = [n] * (n + 1)
    for i in range(n - 1, -1, -1):
        text, content = lines[i]
        next_close[i] = i if not content and text.lstrip().startswith("}") else next_close[i + 1]
    ignored = [False] * n
    frames: list[list] = []  # open if-blocks: [line of an `if !` or None, then-branch only reports]
    for i, (text, content) in enumerate(lines):
        if content:
            if frames:
                frames[-1][1] = False
            continue
        stripped = text.strip()
        word = stripped.split(None, 1)[0].rstrip(";") if stripped else ""
        cut = _top_level_or(text)
        if cut >= 0:
            branch = text[cut + 2:].strip()
            if branch.startswith("{") and "}" not in branch:
                close = next_close[i + 1]
                body = close - (i + 1)
                ignored[i] = close < n and _only_reports(branch, functions, stops_in) \
                    and reports_before[close] - reports_before[i + 1] == body
            else:
                ignored[i] = _only_reports(branch, functions, stops_in)
        one_line = _one_line_if_not(text)
        if one_line is not None:
            ignored[i] = ignored[i] or _only_reports(one_line, functions, stops_in)
            if frames:
                frames[-1][1] = frames[-1][1] and ignored[i]
            continue
        if word == "if":
            if frames:
                frames[-1][1] = False
            frames.append([i if _IF_NOT.match(text) else None, True])
            then = _THEN_WORD.search(text)
            if then and text[then.end():].strip():
                frames[-1][1] = _only_reports(text[then.end():], functions, stops_in)
            continue
        if word in ("else", "elif") and frames:
            top = frames[-1]
            if top[0] is not None:
                ignored[top[0]] = top[1]
                top[0] = None  # the rest of the block no longer decides the check
            continue
        if word == "fi" and frames:
            top = frames.pop()
            if top[0] is not None:
                ignored[top[0]] = top[1]
            continue
        if word == "then" or not stripped:
            continue
        if frames:
            frames[-1][1] = frames[-1][1] and reports[i]
    return ignored


def _first_at_or_below(depths: list[int], minima: list[list[int]], after: int, threshold: int) -> int | None:
    """The first index past ``after`` whose value is at most ``threshold`` (None if none), by a
    table of minima over spans of 1, 2, 4, ... entries: one lookup per function definition costs
    log(lines), where walking forward from each made a script of thousands of unclosed
    definitions quadratic. ``minima`` is :func:`_span_minima` of ``depths``."""
    position = after + 1
    for level in range(len(minima) - 1, -1, -1):
        if position + (1 << level) <= len(depths) and minima[level][position] > threshold:
            position += 1 << level
    return position if position < len(depths) and depths[position] <= threshold else None


def _span_minima(values: list[int]) -> list[list[int]]:
    """minima[k][i] = min(values[i : i + 2**k])."""
    minima = [values]
    while (1 << len(minima)) <= len(values):
        previous, half = minima[-1], 1 << (len(minima) - 1)
        minima.append([min(previous[i], previous[i + half]) for i in range(len(previous) - half)])
    return minima


def _functions(lines: list[tuple[str, bool]]) -> dict[str, tuple[int, int]]:
    """Function name -> (first, last) line index of its body, by brace depth: the body ends at
    the first later line where the depth, counted from the definition, is back to 0 or below
    (braces on content lines, heredoc bodies, do not count)."""
    spans: dict[str, tuple[int, int]] = {}
    # depth[j]: the braces opened minus closed on lines 0..j.
    depth, running = [], 0
    for text, content in lines:
        running += 0 if content else text.count("{") - text.count("}")
        depth.append(running)
    minima: list[list[int]] | None = None
    for start, (text, content) in enumerate(lines):
        if content:
            continue
        m = _FUNC_DEF.match(text) or _ONE_LINE_FUNC.match(text)
        if not m:
            continue
        name = m.group(1) or (m.group(2) if m.lastindex and m.lastindex >= 2 else None)
        if not name:
            continue
        if text.count("{") and text.count("{") == text.count("}"):
            spans[name] = (start, start)
            continue
        # Counted from the definition: the body is closed where depth[j] - depth[start] plus the
        # definition line's own braces is 0 or below, i.e. depth[j] <= depth[start] - that line's.
        minima = minima if minima is not None else _span_minima(depth)
        end = _first_at_or_below(depth, minima, start, depth[start] - (text.count("{") - text.count("}")))
        spans[name] = (start, start if end is None else end)
    return spans


def _innermost_functions(functions: dict[str, tuple[int, int]], count: int) -> list[str | None]:
    """Per line, the function whose body holds it (the one defined last, where bodies nest), or
    None: one sweep over the lines with the bodies open at each, where asking every function of
    every line made a script of thousands of functions quadratic."""
    starts = sorted((span[0], span[1], name) for name, span in functions.items())
    open_bodies: list[tuple[int, int, str]] = []  # (-start, end, name): the latest start on top
    owners: list[str | None] = []
    k = 0
    for index in range(count):
        while k < len(starts) and starts[k][0] <= index:
            heapq.heappush(open_bodies, (-starts[k][0], starts[k][1], starts[k][2]))
            k += 1
        while open_bodies and open_bodies[0][1] < index:
            heapq.heappop(open_bodies)
        owners.append(open_bodies[0][2] if open_bodies else None)
    return owners


def _words_of(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[\w.@+:/-]+", text)}


_LEADING_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
_WRAPPERS: Final[frozenset[str]] = frozenset({"sudo", "exec", "command", "time", "nohup", "env"})


def _command_runs(line: str) -> list[list[str]]:
    """Each simple command of a line as its words, from the program on: the line is cut at ``;``,
    pipes, ``&&``, subshells and shell keywords, and leading assignments and wrappers (``sudo``,
    ``env``, ...) are passed over."""
    runs = []
    for part in re.split(r"\|\||&&|[;|(){}`]|\$\(|\bthen\b|\bdo\b|\belse\b|\bif\b|\bwhile\b|\buntil\b|!", line):
        tokens = part.split()
        first = 0
        while first < len(tokens) and (_LEADING_ASSIGNMENT.match(tokens[first]) or tokens[first] in _WRAPPERS):
            first += 1
        if first < len(tokens):
            runs.append(tokens[first:])
    return runs


def _program(tokens: list[str]) -> str:
    return tokens[0].strip("'\"").rsplit("/", 1)[-1]


def _command_names(line: str) -> set[str]:
    return {_program(tokens) for tokens in _command_runs(line)}


_SUBCOMMAND = re.compile(r"[a-z][a-z0-9-]*")


def _first_arguments(command: str, line: str) -> set[str] | None:
    """The first argument that is not an option of every run of ``command`` on a line (a
    subcommand: ``enable`` in ``ufw --force enable``), or None where the line does not run it."""
    found = None
    # ${key} is a value, not a command run in braces.
    for tokens in _command_runs(re.sub(r"\$\{[^}]*\}", " VALUE ", line)):
        if _program(tokens) != command:
            continue
        found = found if found is not None else set()
        # The first plain word after the options: an option's value (a path, a number, a quoted
        # string) is passed over, so `grafana-cli --homepath /usr/share/grafana admin` runs admin.
        for token in tokens[1:]:
            word = token.strip("'\";,").lower()
            if not token.startswith("-") and _SUBCOMMAND.fullmatch(word):
                found.add(word)
                break
    return found


def _subcommand_kept(tokens: list[str], line: str) -> bool:
    """Whether a line that runs an item's command runs it with the item's subcommand: ``ufw allow``
    is not ``ufw default allow outgoing``, though both words are there. Only an item of a command
    and a plain lower-case word is held to this; a line that does not run the command (a config
    file's ``user nobody``) is left to the token share."""
    if len(tokens) < 2 or not _SUBCOMMAND.fullmatch(tokens[1]) or not _SUBCOMMAND.fullmatch(tokens[0]) \
            or any(t in {"&&", "||", ";", "|"} for t in tokens):
        return True  # not one command and its subcommand (a pipeline is matched token by token)
    firsts = _first_arguments(tokens[0], line.lower())
    if firsts is None or tokens[1] in firsts:
        return True
    # The subcommand is on the line but in another place: the line runs another subcommand with
    # it as an argument (a $variable of that name is not the word). Where it is missing
    # altogether, the token share already says so.
    return re.search(rf"(?<![\w.$-]){re.escape(tokens[1])}(?![\w-])", line.lower()) is None


# --- unreachable code -------------------------------------------------------------------------
#
# A tip's commands under `if false`, after a top-level `exit 0` or behind `false &&` never run;
# read as code they made a script look followed (0.695 alone, 0.99 beside its peers). The script
# is read as shell structure far enough to drop what is certainly unreachable, and no further: a
# line the reader does not follow (a string or a substitution left open at its end, a heredoc it
# cannot delimit as bash does, a construct outside the grammar below) ends what it can say, and
# whatever may run is kept.

_SHELL_OPERATORS: Final[tuple[str, ...]] = (
    "&&", "||", ";;&", ";;", ";&", "|&", "&>>", "&>", "<<<", "<<-", "<<", ">>", "<&", ">&", "<>", ">|",
    ";", "&", "|", "(", ")", "<", ">",
)
_REDIRECTIONS: Final[frozenset[str]] = frozenset({
    "<", ">", ">>", "<<", "<<-", "<<<", "<&", ">&", "<>", ">|", "&>", "&>>",
})
# Reserved words that end a list; one met where no open block expects it is a syntax error.
_CLOSERS: Final[frozenset[str]] = frozenset({"then", "elif", "else", "fi", "do", "done", "esac", "}"})
# Commands whose outcome is known before they run, and the builtins the shell runs for them unless
# the script defines a function of that name (or turns aliases on).
_ALWAYS: Final[frozenset[str]] = frozenset({"true", ":", "/bin/true", "/usr/bin/true"})
_NEVER: Final[frozenset[str]] = frozenset({"false", "/bin/false", "/usr/bin/false"})
_BUILTINS_READ: Final[frozenset[str]] = frozenset({"exit", "true", "false", ":", "test", "["})
_LITERAL_WORD = re.compile(r"[\w.,:/+@%-]+")
_INTEGER = re.compile(r"-?(?:0|[1-9]\d{0,17})")
_NESTING_LIMIT: Final[int] = 64

# A token: kind ("word", "op", "io" for the number before a redirection, "nl" at a line's end), its
# text, the line it is on, and where on that line it starts and ends.
_Token = tuple[str, str, int, int, int]


class _Unreadable(Exception):
    """The shell reader met what it does not follow at token ``at``: nothing from there on is judged."""

    def __init__(self, at: int) -> None:
        super().__init__(at)
        self.at = at


def _word_end(text: str, start: int, test_words: bool) -> int:
    """Where the shell word starting at ``start`` ends, quotes, substitutions and expansions
    included (-1 when the line ends inside one). Inside ``[[ ]]`` (``test_words``), ``&&``, ``<`` and
    parentheses are part of the test, not operators."""
    closers: list[str] = []  # what each open quote, substitution or expansion ends with
    i, n = start, len(text)
    if text.startswith(("<(", ">("), i):
        closers.append(")")
        i += 2
    while i < n:
        ch = text[i]
        top = closers[-1] if closers else ""
        if top == "'":
            i += 1
            if ch == "'":
                closers.pop()
            continue
        if ch == "\\":
            i += 2
            continue
        if top == "$'":
            i += 1
            if ch == "'":
                closers.pop()
            continue
        if top == "`":
            i += 1
            if ch == "`":
                closers.pop()
            continue
        if ch == "$" and i + 1 < n and text[i + 1] in "({":
            closers.append(")" if text[i + 1] == "(" else "}")
            i += 2
            continue
        if ch == "`":
            closers.append("`")
            i += 1
            continue
        if top == '"':
            i += 1
            if ch == '"':
                closers.pop()
            continue
        if ch == "$" and text.startswith("'", i + 1):
            closers.append("$'")
            i += 2
            continue
        if ch in "'\"":
            closers.append(ch)
            i += 1
            continue
        if top == ")":
            if ch == "(":
                closers.append(")")
            elif ch == ")":
                closers.pop()
            i += 1
            continue
        if top == "}":
            if ch == "}":
                closers.pop()
            i += 1
            continue
        if ch == "(" and i > start and text[i - 1] == "=":
            closers.append(")")  # an array: name=(a b c)
            i += 1
            continue
        if ch in " \t" or ch == ";" or (not test_words and ch in "&|()<>"):
            break
        i += 1
    return -1 if closers else min(i, n)


def _line_tokens(text: str, index: int) -> list[_Token] | None:
    """The words and operators of one logical line (None when the line leaves something open)."""
    out: list[_Token] = []
    i, n = 0, len(text)
    test_words = False
    while i < n:
        ch = text[i]
        if ch in " \t":
            i += 1
            continue
        if ch == "#":
            break
        if (not test_words or ch == ";") and not text.startswith(("<(", ">("), i):
            op = next((o for o in _SHELL_OPERATORS if text.startswith(o, i)), None)
            if op is not None:
                out.append(("op", op, index, i, i + len(op)))
                i += len(op)
                continue
        end = _word_end(text, i, test_words)
        if end <= i:
            return None
        word = text[i:end]
        io_number = word.isdigit() and text.startswith(("<", ">"), end)
        out.append(("io" if io_number else "word", word, index, i, end))
        test_words = (test_words or word == "[[") and word != "]]"
        i = end
    return None if test_words else out


def _script_tokens(lines: list[tuple[str, bool]], doubtful: set[int], readable: int) -> list[_Token]:
    """The tokens of the code lines, up to the first line the reader cannot take whole: one that
    leaves something open, or opens a heredoc the logical lines did not delimit as bash does (more
    than one on a line, an end word they did not take, an end marker bash would not read as one)."""
    tokens: list[_Token] = []
    for index, (text, content) in enumerate(lines[:readable]):
        if content:
            continue
        line = _line_tokens(text, index)
        if line is None or index in doubtful:
            break
        # The lines after one the logical lines took for a heredoc are its body: they must be the
        # body of this line's one heredoc operator (not of "<<EOF" in a string), ended by its word.
        heredocs = [k for k, token in enumerate(line) if token[0] == "op" and token[1] in {"<<", "<<-"}]
        found = _HEREDOC.search(text)
        if (heredocs or found) and (
                len(heredocs) != 1 or found is None or found.start() != line[heredocs[0]][3]
                or heredocs[0] + 1 >= len(line) or line[heredocs[0] + 1][1].strip("'\"") != found.group(2)):
            break
        tokens += line
        tokens.append(("nl", "\n", index, len(text), len(text)))
    return tokens


def _literal(word: str) -> str | None:
    """The value of a word that expands to itself alone (no expansion, no pattern), else None."""
    if _LITERAL_WORD.fullmatch(word):
        return word
    if len(word) >= 2 and word[0] == word[-1] == "'" and "'" not in word[1:-1]:
        return word[1:-1]
    if len(word) >= 2 and word[0] == word[-1] == '"' and not re.search(r'["$`\\]', word[1:-1]):
        return word[1:-1]
    return None


def _test_outcome(a: str, op: str, b: str, double: bool) -> bool | None:
    """The outcome of ``[ a op b ]`` (``[[ ]]`` when ``double``) when both sides are literal."""
    left, right = _literal(a), _literal(b)
    if left is None or right is None:
        return None
    if op == "=" or (op == "==" and double):
        return left == right
    if op == "!=":
        return left != right
    compare = {"-eq": int.__eq__, "-ne": int.__ne__, "-lt": int.__lt__, "-le": int.__le__,
               "-gt": int.__gt__, "-ge": int.__ge__}.get(op)
    if compare is None or not _INTEGER.fullmatch(left) or not _INTEGER.fullmatch(right):
        return None
    return bool(compare(int(left), int(right)))


def _outcome(words: list[str]) -> bool | None:
    """Whether a simple command certainly succeeds (True) or fails (False); None when it depends."""
    if len(words) == 1 and words[0] in _ALWAYS:
        return True
    if len(words) == 1 and words[0] in _NEVER:
        return False
    if len(words) == 5 and (words[0], words[4]) in {("[", "]"), ("[[", "]]")}:
        return _test_outcome(words[1], words[2], words[3], words[0] == "[[")
    if len(words) == 4 and words[0] == "test":
        return _test_outcome(words[1], words[2], words[3], False)
    return None


class _ShellReader:
    """A reader of shell structure over :func:`_script_tokens` that records which tokens never run:
    the body of an ``if`` (``elif``) whose condition certainly fails, the branches after one whose
    condition certainly holds, the body of ``while`` over a failing condition (``until`` over a
    holding one), the commands an ``&&`` or ``||`` list certainly skips, and everything after an
    ``exit`` the script certainly runs at its top level. One pass over the tokens; nesting deeper
    than :data:`_NESTING_LIMIT` is not followed."""

    def __init__(self, tokens: list[_Token], outcomes: bool) -> None:
        self.tokens = tokens
        self.at = 0
        self.outcomes = outcomes  # the builtins are the shell's own: outcomes and exits can be read
        self.dead: list[tuple[int, int]] = []  # token ranges [from, to) that never run
        self.opened: list[int] = []  # dead ranges still being read
        self.exit_at: int | None = None  # the token after a top-level exit that certainly runs
        self.nesting = 0

    def read(self) -> None:
        """Read the whole script; at what it cannot follow, close the open dead ranges where its line
        starts (what a line holds is judged whole, or not at all)."""
        try:
            self.statements((), top=True)
            if self.exit_at is None and self.at < len(self.tokens):
                raise _Unreadable(self.at)
        except _Unreadable as stop:
            at = min(stop.at, len(self.tokens))
            while at > 0 and at < len(self.tokens) and self.tokens[at - 1][2] == self.tokens[at][2]:
                at -= 1
            self.dead += [(start, at) for start in self.opened if start < at]
            self.opened = []

    # -- tokens --------------------------------------------------------------------------------
    def peek(self, kind: str, *texts: str) -> bool:
        if self.at >= len(self.tokens):
            return False
        token = self.tokens[self.at]
        return token[0] == kind and (not texts or token[1] in texts)

    def expect(self, kind: str, *texts: str) -> None:
        if not self.peek(kind, *texts):
            raise _Unreadable(self.at)
        self.at += 1

    def newlines(self) -> None:
        while self.peek("nl"):
            self.at += 1

    def ends(self, closers: tuple[str, ...]) -> bool:
        """Whether a list ends here: the end of the script, or a closer the enclosing block expects."""
        if self.at >= len(self.tokens):
            return True
        kind, text = self.tokens[self.at][:2]
        return text in closers and kind in ("word", "op")

    def open_dead(self, dead: bool) -> None:
        if dead:
            self.opened.append(self.at)

    def close_dead(self, dead: bool) -> None:
        if dead:
            self.dead.append((self.opened.pop(), self.at))

    # -- grammar -------------------------------------------------------------------------------
    def statements(self, closers: tuple[str, ...], top: bool = False) -> bool | None:
        """A list up to one of ``closers``: the outcome of its last command when it is the only one
        and known (what an ``if`` or ``while`` tests)."""
        outcome: bool | None = None
        count = 0
        while True:
            self.newlines()
            if self.ends(closers) or self.exit_at is not None:
                return outcome if count == 1 else None
            if self.peek("word") and self.tokens[self.at][1] in _CLOSERS:
                raise _Unreadable(self.at)  # a closer no open block expects
            outcome = self.and_or(top)
            count += 1
            if self.exit_at is not None:
                return None
            if self.peek("op", ";", "&") or self.peek("nl"):
                if self.peek("op", "&"):
                    outcome = None
                self.at += 1
            elif not self.ends(closers):
                raise _Unreadable(self.at)

    def and_or(self, top: bool) -> bool | None:
        """Pipelines joined by ``&&`` and ``||``: those certainly skipped are dead; the outcome is
        known while each pipeline that runs certainly runs and its outcome is known."""
        outcome, exits = self.pipeline()
        exit_end = self.at
        while self.peek("op", "&&", "||"):
            skips = self.tokens[self.at][1] == "||"
            self.at += 1
            self.newlines()
            if outcome is None or outcome != skips:
                following, _ = self.pipeline()
                outcome = following if outcome is not None else None
            else:
                self.open_dead(True)
                self.pipeline()
                self.close_dead(True)
        if top and exits and self.outcomes and not self.peek("op", "&"):
            # Nothing after an exit the script runs at its top level runs: the rest of the script.
            self.exit_at = exit_end
            self.dead.append((exit_end, len(self.tokens)))
        return outcome

    def pipeline(self) -> tuple[bool | None, bool]:
        """A pipeline's outcome (known for a lone command, negated by ``!``) and whether it is a lone
        ``exit`` with at most one argument (more make bash refuse to exit)."""
        negated = self.peek("word", "!")
        if negated:
            self.at += 1
        outcome, exits = self.command()
        alone = True
        while self.peek("op", "|", "|&"):
            self.at += 1
            self.newlines()
            self.command()
            alone = False
        if not alone:
            return None, False
        if negated:
            return (None if outcome is None else not outcome), False
        return outcome, exits

    def command(self) -> tuple[bool | None, bool]:
        if self.at >= len(self.tokens):
            raise _Unreadable(self.at)
        kind, text = self.tokens[self.at][:2]
        if kind == "word" and text in ("{", "if", "while", "until", "for", "select", "case", "function") \
                or kind == "op" and text == "(":
            self.compound()
            return None, False
        if kind == "word" and self.at + 2 < len(self.tokens) and self.tokens[self.at + 1][:2] == ("op", "(") \
                and self.tokens[self.at + 2][:2] == ("op", ")"):
            self.at += 3  # name() body
            self.newlines()
            self.compound()
            return None, False
        return self.simple_command()

    def simple_command(self) -> tuple[bool | None, bool]:
        words: list[str] = []
        start = self.at
        while self.at < len(self.tokens):
            kind, text = self.tokens[self.at][:2]
            if kind == "word":
                words.append(text)
            elif kind == "io" or (kind == "op" and text in _REDIRECTIONS):
                if kind == "op":
                    self.at += 1
                    if not self.peek("word"):
                        raise _Unreadable(self.at)
            else:
                break
            self.at += 1
        if self.at == start or self.peek("op", "("):
            raise _Unreadable(self.at)
        if not self.outcomes or not words:
            return None, False
        return _outcome(words), words[0] == "exit" and len(words) <= 2

    def redirections(self) -> None:
        while self.peek("io") or (self.peek("op") and self.tokens[self.at][1] in _REDIRECTIONS):
            if self.peek("io"):
                self.at += 1
            self.at += 1
            self.expect("word")

    def compound(self) -> None:
        """A compound command, a function definition, and the redirections after it."""
        self.nesting += 1
        if self.nesting > _NESTING_LIMIT:
            raise _Unreadable(self.at)
        kind, text = self.tokens[self.at][:2]
        self.at += 1
        if text == "{":
            self.statements(("}",))
            self.expect("word", "}")
        elif text == "(" and kind == "op":
            self.statements((")",))
            self.expect("op", ")")
        elif text == "if":
            self.if_clause()
        elif text in ("while", "until"):
            outcome = self.statements(("do",))
            self.expect("word", "do")
            dead = outcome is (text == "until")
            self.open_dead(dead)
            self.statements(("done",))
            self.close_dead(dead)
            self.expect("word", "done")
        elif text in ("for", "select"):
            self.expect("word")
            self.newlines()
            if self.peek("word", "in"):
                self.at += 1
                while self.peek("word"):
                    self.at += 1
            if self.peek("op", ";"):
                self.at += 1
            self.newlines()
            self.expect("word", "do")
            self.statements(("done",))
            self.expect("word", "done")
        elif text == "case":
            self.case_clause()
        else:  # function name [()] body
            self.expect("word")
            if self.peek("op", "("):
                self.at += 1
                self.expect("op", ")")
            self.newlines()
            self.compound()
        self.redirections()
        self.nesting -= 1

    def if_clause(self) -> None:
        """``if``: a branch whose condition certainly fails is dead, and so is every branch after one
        whose condition certainly holds (the conditions of later ``elif`` included)."""
        taken = False
        while True:
            outcome = self.statements(("then",))
            self.expect("word", "then")
            dead = outcome is False
            self.open_dead(dead)
            self.statements(("elif", "else", "fi"))
            self.close_dead(dead)
            if outcome is True and not taken:
                taken = True
                self.open_dead(True)
            if self.peek("word", "elif"):
                self.at += 1
                continue
            if self.peek("word", "else"):
                self.at += 1
                self.statements(("fi",))
            self.close_dead(taken)
            self.expect("word", "fi")
            return

    def case_clause(self) -> None:
        self.expect("word")
        self.newlines()
        self.expect("word", "in")
        self.newlines()
        while not self.peek("word", "esac"):
            if self.peek("op", "("):
                self.at += 1
            self.expect("word")
            while self.peek("op", "|"):
                self.at += 1
                self.expect("word")
            self.expect("op", ")")
            self.statements((";;", ";&", ";;&", "esac"))
            if self.peek("op", ";;", ";&", ";;&"):
                self.at += 1
            self.newlines()
        self.at += 1


def _reachable(lines: list[tuple[str, bool]], doubtful: set[int], readable: int) -> list[tuple[str, bool]]:
    """The logical lines without the code that certainly never runs (see :class:`_ShellReader`),
    read from the first ``readable`` lines: a line all of whose code is dead is dropped, and so is
    the body of a heredoc its command never runs; dead code on a line with live code is blanked."""
    tokens = _script_tokens(lines, doubtful, readable)
    following: list[_Token] = [*tokens[1:], ("nl", "", -1, 0, 0)] if tokens else []
    outcomes = not any(
        (kind == "word" and text in _BUILTINS_READ and after[:2] == ("op", "("))
        or (text == "function" and after[1] in _BUILTINS_READ)
        or text in ("enable", "alias") or "expand_aliases" in text
        for (kind, text, *_), after in zip(tokens, following, strict=True))
    reader = _ShellReader(tokens, outcomes)
    reader.read()
    if not reader.dead:
        return lines
    marks = [0] * (len(tokens) + 1)
    for start, end in reader.dead:
        marks[start] += 1
        marks[end] -= 1
    # Per line, the spans of dead tokens, and whether any token on it lives.
    spans: dict[int, list[list[int]]] = {}
    lives: set[int] = set()
    dead_heredocs: set[int] = set()
    depth = 0
    previous_dead = False
    for k, (kind, text, line, start, end) in enumerate(tokens):
        depth += marks[k]
        if kind == "nl":
            previous_dead = False
            continue
        if depth > 0:
            if previous_dead:
                spans[line][-1][1] = end
            else:
                spans.setdefault(line, []).append([start, end])
            if kind == "op" and text in ("<<", "<<-"):
                dead_heredocs.add(line)
        else:
            lives.add(line)
        previous_dead = depth > 0
    # The exit's own line ends where the exit does; the lines after it are dropped whole.
    exit_line = None if reader.exit_at is None else tokens[min(reader.exit_at, len(tokens) - 1)][2]
    out: list[tuple[str, bool]] = []
    owner_dead = False  # the code line a heredoc body belongs to is dead, or its heredoc is
    for index, (text, content) in enumerate(lines):
        if exit_line is not None and index > exit_line:
            break
        if content:
            if not owner_dead:
                out.append((text, content))
            continue
        if index in spans and index not in lives:
            owner_dead = True
            continue
        owner_dead = index in dead_heredocs
        if index in spans:
            pieces, position = [], 0
            for start, end in spans[index]:
                pieces += [text[position:start], " "]
                position = end
            text = "".join(pieces) + text[position:]
        out.append((text, content))
    return out


def bounded_script(script: str, limit: int = MAX_SCRIPT_CHARS) -> tuple[str, bool]:
    """The part of ``script`` the signal reads, and whether the cap cut anything: the whole script up
    to ``limit`` characters, else its first and its last ``limit // 2`` characters, each cut back to
    whole lines (a line longer than that is cut where the half ends)."""
    parts = _head_and_tail(script, limit)
    return (script, False) if parts is None else (parts[0] + parts[1], True)


def _head_and_tail(script: str, limit: int) -> tuple[str, str] | None:
    """The head (ending in a line break) and the tail :func:`bounded_script` reads of a script past
    ``limit``; None for a script within it."""
    if len(script) <= limit:
        return None
    half = limit // 2
    head = script[:half]
    cut = head.rfind("\n")
    head = head[: cut + 1] if cut > 0 else head
    tail = script[-half:]
    cut = tail.find("\n")
    tail = tail[cut + 1 :] if 0 <= cut < len(tail) - 1 else tail
    return (head if head.endswith("\n") else head + "\n"), tail


def extract_script(script: str) -> ScriptView:
    """The executable view of a fix script (see the module docstring for what is kept); a script past
    :data:`MAX_SCRIPT_CHARS` is read by its head and tail only (:func:`bounded_script`)."""
    parts = _head_and_tail(script, MAX_SCRIPT_CHARS)
    capped = parts is not None
    doubtful: set[int] = set()
    lines = _logical_lines(script if parts is None else parts[0] + parts[1], doubtful)
    # Past the cap, what the head says is read: its lines are the first of the view (all but its
    # last, which may join the tail's first), and which block a line of the tail stands in is lost
    # with the middle.
    readable = len(lines) if parts is None else len(_logical_lines(parts[0])) - 1
    lines = _reachable(lines, doubtful, readable)
    functions = _functions(lines)
    # Function bodies are kept only when the function is called somewhere outside its own body
    # (a trap handler counts, run when the script ends).
    calls: dict[str, list[int]] = {name: [] for name in functions}
    for index, (text, content) in enumerate(lines):
        if content:
            continue
        trap = re.match(r"^\s*trap\s+['\"]?([A-Za-z_][\w:-]*)", text)
        names = {trap.group(1)} if trap else _command_names(text)
        for name in names:
            if name in functions and not (functions[name][0] <= index <= functions[name][1]):
                calls[name].append(len(lines) if trap else index)
    owners = _innermost_functions(functions, len(lines))
    memo: dict[int, tuple[int, ...] | None] = {}
    # Per function, where its first caller runs: the same for every line of its body, so found once
    # (per line, a long body called from many places cost body times calls).
    first_calls: dict[str, tuple[int, ...] | None] = {}

    def position(index: int, depth: int = 0) -> tuple[int, ...] | None:
        """Where a line runs, as a sort key: its own place, or for a function's lines its first
        caller's place followed by the place inside the body (None when never called); a trap
        handler runs last. Order is then read as the script executes."""
        if index >= len(lines):
            return (index,)
        if index in memo:
            return memo[index]
        name = owners[index]
        result: tuple[int, ...] | None = (index,)
        if name is not None:
            first = first_call(name, depth)
            result = (*first, index - functions[name][0]) if first is not None else None
        memo[index] = result
        return result

    def first_call(name: str, depth: int) -> tuple[int, ...] | None:
        if name in first_calls:
            return first_calls[name]
        if depth >= 8:
            return None
        callers = [where for where in (position(c, depth + 1) for c in calls[name]) if where is not None]
        first_calls[name] = min(callers) if callers else None
        return first_calls[name]

    message_funcs = {name for name in functions if _LOGGER.match(name)}
    failures_ignored = _ignored_failures(lines, functions)
    variables: dict[str, str] = {}
    kept: list[str] = []
    content_lines: list[bool] = []
    order: list[tuple[int, ...]] = []
    ignored: list[bool] = []
    for index, (text, content) in enumerate(lines):
        where = position(index)
        if where is None:
            continue
        if content:
            line = _expand(text, variables)
        else:
            m = _ASSIGN.match(text)
            if m:
                variables[m.group(1)] = _expand(m.group(2).strip("\"'"), variables)
            line = _expand(_without_messages(text, message_funcs), variables)
        if line.strip():
            kept.append(line)
            content_lines.append(content)
            order.append(where)
            ignored.append(failures_ignored[index])
    text = "\n".join(kept)
    commands: set[str] = set()
    for line in kept:
        commands |= _command_names(line)
    checks = [not content and _only_reads(line) for line, content in zip(kept, content_lines, strict=True)]
    writes = [content or _writes(line) for line, content in zip(kept, content_lines, strict=True)]
    actions = [line if content else _action_text(line) for line, content in zip(kept, content_lines, strict=True)]
    return ScriptView(kept, checks, writes, text, frozenset(_words_of(text)), frozenset(commands), actions, order,
                      capped, ignored)


# A backslash escapes the character after it, as sed reads it; read either as an escape or as
# itself, a run of backslashes could be split 2**n ways before the pattern failed.
_SED_SUBST = re.compile(r"(?<![\w])s([|/#,@:!%])((?:\\.|(?!\1)[^\\\n])*)\1((?:\\.|(?!\1)[^\\\n])*)\1")
_SED_ADDRESS = re.compile(r"(?:(?<=['\";])|^)/((?:\\.|[^/\\])+)/(?=\s*[dsicaI!]|,)")


def _action_text(line: str) -> str:
    """A line without what it only looks for: the segments that read (grep, test, [[ ]]) and the
    patterns sed matches (``s/NOPASSWD//``, ``/gpgcheck=0/d``) are blanked, the replacement kept."""
    parts = re.split(r"(\|\||&&|;|\||\$\(|`)", line)
    out = []
    for part in parts:
        names = _command_names(part)
        if names and names <= _READERS:
            out.append(" " * len(part))
            continue
        if names & {"sed", "perl"}:
            part = _SED_SUBST.sub(lambda m: "s" + m.group(1) + " " * len(m.group(2)) + m.group(1) + m.group(3) + m.group(1), part)
            part = _SED_ADDRESS.sub(lambda m: " " * (len(m.group(0))), part)
        out.append(part)
    return "".join(out)


_WRITERS: Final[frozenset[str]] = frozenset(
    {"cp", "mv", "install", "ln", "rm", "truncate", "chmod", "chown", "mkdir", "touch", "tee", "patch", "dd"})


def _writes(line: str) -> bool:
    """A line that changes a file: a redirect into one, an in-place edit, or a file-writing command."""
    if _FILE_REDIRECT.search(line) or re.search(r"\b(sed|perl)\s+(-\w*\s+)*-i", line):
        return True
    return bool(_command_names(line) & _WRITERS)


_READERS: Final[frozenset[str]] = frozenset(
    {"grep", "egrep", "fgrep", "test", "[", "[[", "diff", "cmp", "stat", "ls", "head", "tail", "wc", "cut",
     "awk", "sort", "uniq", "findmnt", "true", "false", "return", "exit", "local"})


def _only_reads(line: str) -> bool:
    """A line whose every command only reads (no redirect into a file, no sed -i)."""
    if _FILE_REDIRECT.search(line) or re.search(r"\bsed\s+(-\w*\s+)*-i|\btee\b|\bawk\s+-i", line):
        return False
    names = _command_names(line)
    return bool(names) and names <= _READERS


def _expand(text: str, variables: dict[str, str]) -> str:
    if "$" not in text:
        return text
    return re.sub(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)",
                  lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), text)


# Commands that only show or log what is piped into them.
_MESSAGE_SINKS: Final[frozenset[str]] = frozenset({
    "logger", "wall", "mail", "mailx", "systemd-cat", "cat", "less", "more", "column", "fold", "fmt", "head", "tail",
})


def _without_messages(line: str, message_funcs: set[str]) -> str:
    """Drop the arguments of echo/printf/logging calls unless they are written into a file or piped
    into a command that writes or applies them."""
    parts = re.split(r"(\|\||&&|;)", line)
    out = []
    for part in parts:
        tokens = part.split()
        head = tokens[0] if tokens else ""
        if head in _MESSAGE_CMDS or head in message_funcs or _LOGGER.match(head or "-"):
            redirect = _FILE_REDIRECT.search(part)
            consumer = part.split("|", 1)[1].split() if "|" in part else []
            consumer = consumer[1:] if consumer[:1] == ["sudo"] else consumer
            if redirect and head in _MESSAGE_CMDS:
                out.append(part)        # echo 'Key value' >> /etc/file: that is file content
            elif head in _MESSAGE_CMDS and consumer and consumer[0] not in _MESSAGE_SINKS \
                    and consumer[0] not in message_funcs and not _LOGGER.match(consumer[0]):
                # echo 'Key value' | tee -a /etc/file, echo '...' | crontab -, ... | chpasswd: the
                # text is what the next command writes or applies.
                out.append(part)
            else:
                out.append(" ")
        else:
            out.append(part)
    return "".join(out)


# --- agreement --------------------------------------------------------------------------------

FEATURE_NAMES: Final[tuple[str, ...]] = (
    "prescribed_share",      # share of prescribed items found in the executable text (partial 0.5)
    "prescribed_specific",   # share of prescribed commands, paths and settings found in full
    "prescribed_best",       # the best-found prescribed command, path or setting (lists of alternatives)
    "prescribed_missing",    # 1 when the tip prescribes something specific and none of it was found
    "warned_share",          # share of warned-against items found
    "warned_any",            # 1 when any warned-against command, path or setting was found
    "no_items",              # 1 when the tip names nothing the script could show
    "value_conflict",        # 1 when the script gives a prescribed key only values other than the tip's
    "order_broken",          # 1 when the script runs a step the tip orders first only after the later one
    "prose_overlap",         # tips naming nothing specific: share of their content words the code uses
)


@dataclass
class Features:
    values: dict[str, float]
    evidence: dict

    def vector(self) -> list[float]:
        return [self.values[name] for name in FEATURE_NAMES]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().strip("'\"`").lower())


def _tokens(text: str) -> list[str]:
    """An item's searchable tokens: words, options and paths, placeholders dropped."""
    out = []
    for token in re.split(r"[\s=,'\"`()]+", text):
        token = token.strip(".:;")
        if token and not re.fullmatch(r"<[\w-]+>|\*|\.\.\.", token):
            out.append(token if token.startswith("-") else token.lower())
    return out


def _has(token: str, line: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(token)}(?![\w-])", line) is not None


_SHORT_CLUSTER = re.compile(r"-[A-Za-z]{2,4}")
_SHORT_OPTIONS = re.compile(r"(?<![\w-])-([A-Za-z]+)\b")


def _has_token(token: str, line: str) -> bool:
    """Whether a line holds one token of an item. Options are case-sensitive (``sshd -t`` validates,
    ``sshd -T`` dumps) and a cluster of short options matches them written apart (``-aG`` is
    ``-a -G``); anything else is matched without case."""
    if token.startswith("-") and len(token) > 1:
        if re.search(rf"(?<![\w.-]){re.escape(token)}(?![\w-])", line):
            return True
        if _SHORT_CLUSTER.fullmatch(token):
            letters = set("".join(_SHORT_OPTIONS.findall(line)))
            return set(token[1:]) <= letters
        return False
    return _has(token.lower(), line.lower())


def _path_in(path: str, line: str) -> bool:
    """A path at a path boundary: /etc/sudoers is not /etc/sudoers.d/x, /etc/sysctl.d is in /etc/sysctl.d/99.conf."""
    return re.search(rf"{re.escape(path)}(?![\w.-])", line.lower()) is not None


_COPIERS: Final[frozenset[str]] = frozenset({"cp", "mv", "install", "ln", "rsync"})


def _writes_path(path: str, line: str) -> bool:
    """Whether a line that writes writes this path: the target of a copy, not its source (a backup
    ``cp -a /etc/sudoers /root/sudoers.bak`` reads /etc/sudoers)."""
    for segment in re.split(r"\|\||&&|;|\|", line):
        if not _path_in(path, segment):
            continue
        names = _command_names(segment)
        if names and names <= _COPIERS and not _FILE_REDIRECT.search(segment):
            words = segment.split()
            if words and _path_in(path, words[-1].strip("'\"")):
                return True
            continue
        return True
    return False


_SERVICE_FORM = re.compile(r"\bservice\s+([\w@.-]+)\s+(start|stop|restart|reload|status|try-restart|condrestart)\b")
# An option is a dash and a word: "--?[\w-]+" read "--now" two ways, 2**n to fail on n options.
_SYSTEMCTL_FORM = re.compile(r"\bsystemctl\s+((?:-[\w-]+\s+)*)(start|stop|restart|reload|status|try-restart|enable|disable|mask)"
                             r"\s+((?:-[\w-]+\s+)*)([\w@.-]+)")
# The options of one command are looked for within 200 characters of its name: an unbounded lazy
# scan made a line of many "install" words quadratic (a 200 KB script took minutes).
_INSTALL_MODE = re.compile(r"\b(?:install|mkdir)\b[^;|&]{0,200}?\s(?:-m\s*|--mode=)(0?[0-7]{3,4})")
# A mode or an owner set by any command, as the tip's "mode 0600" / "owned by root:root" names it.
_ANY_MODE = re.compile(r"(?:\bchmod(?:\s+-[A-Za-z]+){0,8}|\b(?:install|mkdir)\b[^;|&]{0,200}?\s-m|--mode=?)\s*(0?[0-7]{3,4})\b")
_ANY_OWNER = re.compile(r"\b(?:chown(?:\s+-[A-Za-z]+){0,8}|install\b[^;|&]{0,200}?\s-o)\s+([\w-]+)"
                        r"(?::([\w-]+)|[^;|&]{0,200}?\s-g\s+([\w-]+))?")


# A symbolic mode made only of assignments ("u=r,go=", "u=rw,g=r,o="), where chmod, install -m
# or mkdir -m set one; with + or - the result depends on the file's mode before, so it stays.
_SYMBOLIC_MODE = re.compile(r"(\bchmod(?:\s+-[A-Za-z]+){0,8}\s+|\s-m\s*|--mode[=\s])"
                            r"([ugoa]{0,4}=[rwx]{0,3}(?:,[ugoa]{0,4}=[rwx]{0,3}){0,5})(?![\w,=+-])")
_LONG_OWNERSHIP = re.compile(r"--(owner|group)[=\s]\s*")


def _octal(symbolic: str) -> str:
    """``u=r,go=`` as ``0400``: each clause sets its classes' bits (no class: all three)."""
    bits = {"u": 0, "g": 0, "o": 0}
    for clause in symbolic.split(","):
        who, _, perms = clause.partition("=")
        value = (4 if "r" in perms else 0) + (2 if "w" in perms else 0) + (1 if "x" in perms else 0)
        for cls in (who.replace("a", "ugo") or "ugo"):
            bits[cls] = value
    return f"0{bits['u']}{bits['g']}{bits['o']}"


def _spelled_short(line: str) -> str:
    """A line with ``install --owner=a --group=b`` as ``-o a -g b`` and symbolic modes as octal."""
    line = _LONG_OWNERSHIP.sub(lambda m: f"-{m.group(1)[0]} ", line)
    return _SYMBOLIC_MODE.sub(lambda m: m.group(1) + _octal(m.group(2)), line)


def _synonyms(line: str) -> str:
    """A line with the other spellings of what it does appended, so an item written one way
    matches a script that does the same another way: ``service sshd restart`` is ``systemctl
    restart sshd`` (and the reverse), ``sshd.service`` is ``sshd``, ``install -m 0440`` and
    ``mkdir -m 0700`` set a mode as ``chmod`` does, ``--owner=a`` is ``-o a`` and ``u=r,go=`` is
    ``0400``."""
    short = _spelled_short(line)
    # The short spelling itself, then what both spellings do, read from it.
    extra = [short] if short != line else []
    line, original = short, line
    extra += [f"systemctl {m.group(2)} {m.group(1)}" for m in _SERVICE_FORM.finditer(line)]
    extra += [f"service {m.group(4)} {m.group(2)}" for m in _SYSTEMCTL_FORM.finditer(line)]
    extra += [f"chmod {m.group(1)}" for m in _INSTALL_MODE.finditer(line)]
    # "mode 0600" as a tip writes it, with and without the leading zero; "owner user:group" likewise.
    for m in _ANY_MODE.finditer(line):
        digits = m.group(1).lstrip("0").rjust(3, "0")
        extra.append(f"mode 0{digits} mode {digits}")
    for m in _ANY_OWNER.finditer(line):
        extra.append(f"owner {m.group(1)}:{m.group(2) or m.group(3)}" if m.group(2) or m.group(3) else f"owner {m.group(1)}")
    if ".service" in line:
        extra.append(re.sub(r"(?<=[\w@-])\.service\b", "", line))
    return original if not extra else original + " ; " + " ; ".join(extra)


def _spelled_lines(view: ScriptView, warned: bool) -> list[tuple[str, str]]:
    """The lines items are matched against (what the lines do, for a warned item), each with its
    other spellings (:func:`_synonyms`) and in lower case."""
    if warned not in view._spelled:
        view._spelled[warned] = [(spelled, spelled.lower()) for spelled in
                                 map(_synonyms, view.actions if warned else view.lines)]
    return view._spelled[warned]


def _programs_run(view: ScriptView, warned: bool) -> list[set[str]]:
    """The programs each of :func:`_spelled_lines` runs."""
    if warned not in view._runs:
        view._runs[warned] = [_command_names(low) for _, low in _spelled_lines(view, warned)]
    return view._runs[warned]


def _match(item: Item, view: ScriptView, warned: bool = False) -> float:
    """How fully the script's executable text shows the item, from 0 to 1.

    Commands and settings are looked for line by line: the share of the item's tokens on the best
    line that also holds its first token (the command word or the key). A setting or path seen only
    on lines that read (grep, test, ...) counts half: the script checked it, it did not write it.
    A warned item is looked for in what the lines do (:attr:`ScriptView.actions`): the pattern a
    grep looks for or a sed replaces is what the script removes, not what it does."""
    if item.kind == "bound":
        # Found where its key is set; whether the value keeps the bound is _values' check.
        item = Item("setting", item.text.split()[0], item.group)
    text = _norm(item.text)
    lines = view.actions if warned else view.lines
    if item.kind == "word":
        pattern = rf"(?<![\w-]){re.escape(text)}(?![\w-])"
        return 1.0 if any(re.search(pattern, line.lower()) for line in lines) else 0.0
    if item.kind == "path":
        path = re.sub(r"<[\w-]+>|\*", "", text).rstrip("/")
        if not path:
            return 0.0
        best = 0.0
        for line, check, write in zip(view.lines, view.checks, view.writes, strict=True):
            if _path_in(path, line):
                if warned:
                    best = max(best, 1.0 if write and _writes_path(path, line) else 0.0)
                else:
                    best = max(best, 0.5 if check else 1.0)
        if best == 0.0 and not warned:
            base = path.rsplit("/", 1)[-1]
            if len(base) > 3 and base in view.words:
                best = 0.5
        return best
    tokens = _tokens(item.text)
    if not tokens:
        return 0.0
    if len(tokens) > 1 and tokens[0] in {"systemctl", "service"}:
        tokens = [t.removesuffix(".service") for t in tokens]
    head, rest = tokens[0], tokens[1:]
    best = 0.0
    spelled = _spelled_lines(view, warned)
    runs = _programs_run(view, warned) if item.kind == "command" else None
    for k, ((line, _), check) in enumerate(zip(spelled, view.checks, strict=True)):
        # A command counts where it runs (sshd -t), not where its name is an argument (reload sshd).
        if not (head.lower() in runs[k] if runs is not None else _has_token(head, line)):
            continue
        if not _subcommand_kept(tokens, line):
            continue
        if item.kind == "command" and rest:
            # A command is its subcommand and options: `systemctl daemon-reload` is not any
            # systemctl, `lvextend -r` not a plain lvextend.
            share = sum(_has_token(t, line) for t in rest) / len(rest)
        else:
            share = (1 + sum(_has_token(t, line) for t in rest)) / len(tokens)
        if item.kind == "setting" and check:
            share *= 0.5
        best = max(best, share)
    return best


_SERVICE_VERBS: Final[dict[str, frozenset[str]]] = {
    "stop": frozenset({"stop", "kill"}),
    "start": frozenset({"start", "restart", "enable", "reload-or-restart", "try-restart"}),
}


def _runs_service(verb: str, name: str, line: str) -> bool:
    """Whether a line starts (or stops) the service ``name`` (any, when empty): ``systemctl`` with
    the verb (``disable --now`` and ``mask --now`` stop), ``service name verb``, ``/etc/init.d/name verb``."""
    verbs = _SERVICE_VERBS[verb]
    for tokens in _command_runs(line.lower()):
        words = [t.strip("'\"") for t in tokens]
        program = _program(words)
        if program == "systemctl":
            acts = verbs & set(words[1:]) or (verb == "stop" and "--now" in words and {"disable", "mask"} & set(words))
            units = [w.removesuffix(".service") for w in words[1:] if not w.startswith("-")]
            if acts and (not name or name in units):
                return True
        elif program == "service" and len(words) > 2 and (not name or words[1].removesuffix(".service") == name):
            if words[2] in verbs:
                return True
        elif words[0].startswith("/etc/init.d/") and len(words) > 1 and (not name or program == name):
            if words[1] in verbs:
                return True
    return False


def _line_matches(item: Item, line: str) -> bool:
    """Whether one executable line shows the whole item (the test :func:`_order` places items by)."""
    if item.kind == "service":
        verb, _, name = item.text.partition(" ")
        return _runs_service(verb, name, line)
    if item.kind == "apply":
        return re.search(r"(?<![\w-])(?:restart|reload|try-restart|reload-or-restart|condrestart)(?![\w-])",
                         line, re.IGNORECASE) is not None
    if item.kind == "path":
        return _path_in(re.sub(r"<[\w-]+>|\*", "", item.text.lower()).rstrip("/"), line)
    tokens = _tokens(item.text.split()[0] if item.kind == "bound" else item.text)
    if not tokens:
        return False
    head = tokens[0]
    if not (head.lower() in _command_names(line.lower()) if item.kind == "command" else _has_token(head, line)):
        return False
    return _subcommand_kept(tokens, line) and all(_has_token(t, line) for t in tokens[1:])


def _order(tip: TipItems, view: ScriptView) -> list[tuple[str, float]]:
    """Each order the tip states, as (what, 1.0 kept or 0.0 broken); pairs the script does not
    show both sides of say nothing. Broken means every run of the later step comes before the
    first run of the earlier one ("sshd -t" only after the restart), or every run of the earlier
    step is one whose failure the script only reports (``sshd -t || true``, an ``if ! sshd -t``
    that only warns): the step is there, but it cannot hold the later one back."""
    out = []
    for earlier, later in tip.order:
        first = [k for k, line in enumerate(view.actions)
                 if not view.checks[k] and any(_line_matches(i, line) for i in earlier)]
        if not first and any(i.kind == "command" for i in earlier):
            # A validator is a reading command: look for it on checking lines too (if ! sshd -t).
            first = [k for k, line in enumerate(view.lines) if any(_line_matches(i, line) for i in earlier)]
        last = [view.order[k] for k, line in enumerate(view.actions)
                if not view.checks[k] and any(_line_matches(i, line) for i in later)]
        what = f"{' / '.join(i.text for i in earlier)} before {' / '.join(i.text for i in later)}"
        if last and not first and all(i.kind == "service" for i in earlier):
            # The service the tip says to stop (or start) first never is, and the later step runs.
            out.append((what + " (never done)", 0.0))
        elif first and last:
            heeded = [view.order[k] for k in first if not (view.ignored and view.ignored[k])]
            if not heeded:
                out.append((what + " (its failure ignored)", 0.0))
            elif any(i.kind == "service" and i.text.startswith("start") for i in later):
                # Before a service starts: its first start counts, a later restart does not mend it.
                out.append((what, 1.0 if min(last) >= min(heeded) else 0.0))
            else:
                out.append((what, 1.0 if max(last) >= min(heeded) else 0.0))
    return out


_VALUE_KEY = re.compile(r"[A-Za-z_][\w.-]*")


def _assigned(key: str, view: ScriptView) -> list[str]:
    """The values a script gives a setting on the lines that act (a grep for ``Key 0`` sets nothing;
    a sed pattern is blanked, its replacement kept). File modes and owners are read from chmod,
    ``install -m``, ``mkdir -m`` and chown, whichever the script uses."""
    values = []
    for line, check in zip(view.actions, view.checks, strict=True):
        if check:
            continue
        if key == "mode":
            values += re.findall(r"(?:\bchmod(?:\s+-[A-Za-z]+)*|\s-m|--mode=?)\s*(0?[0-7]{3,4})\b", line)
            continue
        if key == "owner":
            values += re.findall(r"\bchown(?:\s+-[A-Za-z]+)*\s+([\w-]+:[\w-]+)", line)
            continue
        for m in re.finditer(rf"(?:(?<![\w.$\\-])|(?<=\\[nt])){re.escape(key)}(?:\s*[=:]\s*|\s+)[\"']?([^\s\"',;|)\\]+)", line,
                             re.IGNORECASE):
            value = _without_sed_flags(m.group(1)).rstrip(":")
            if value and not value.startswith("$") and _value_like(value):
                values.append(value)
    return values


def _without_sed_flags(value: str) -> str:
    """A value without the end of the sed expression it stands in (``yes/g``, ``600|``): its last run
    of ``/|#}`` and the flags after it. Cut by stripping from the end, where the pattern for it,
    tried from each character of a long run of them, read the rest of the run every time."""
    flags = len(value.rstrip("gI"))
    delimiters = len(value[:flags].rstrip("/|#}"))
    return value[:delimiters] if delimiters < flags else value


def _same_value(a: str, b: str) -> bool:
    a, b = a.strip("'\"").lower(), b.strip("'\"").lower()
    if re.fullmatch(r"0?[0-7]{3,4}", a) and re.fullmatch(r"0?[0-7]{3,4}", b):
        return int(a, 8) == int(b, 8)
    return a == b


# Values a setting takes that are plain words; any other plain word after a key is prose
# ("a low MaxAuthTries breaks clients").
_WORD_VALUES: Final[frozenset[str]] = frozenset({
    "yes", "no", "on", "off", "true", "false", "enabled", "disabled", "enforcing", "permissive", "none",
    "all", "always", "never", "any", "auto", "strict", "required", "optional", "deny", "allow",
    "accept", "reject", "drop", "persistent", "volatile",
})
_NOT_KEYS: Final[frozenset[str]] = frozenset({"select", "set", "alter", "create", "grant", "show", "use", "run"})


def _value_like(value: str) -> bool:
    return (value.lower() in _WORD_VALUES or value.isupper() or bool(re.search(r"[\d/@%:.+-]", value))) and \
        bool(re.match(r"[\w/-]", value))


def _values(tip: TipItems, view: ScriptView) -> list[tuple[str, float]]:
    """Each prescribed ``Key value`` the script assigns: 1.0 when it gives the tip's value, 0.0 when
    it gives the key only other values ("CountMax 0" where the tip says 1). A key the tip names
    with two values ("ships `X yes`; change it to `X no`") is not checked."""
    settings = [(item, _tokens(item.text)) for item in tip.prescribed + tip.warned if item.kind == "setting"]
    keys: dict[str, int] = {}
    for _, tokens in settings:
        if len(tokens) == 2:
            keys[tokens[0].lower()] = keys.get(tokens[0].lower(), 0) + 1
    out = []
    for item in tip.prescribed:
        if item.kind == "bound":
            key, op, limit = item.text.split()
            got = [g for g in _assigned(key, view) if _magnitude(g) is not None]
            if got:
                bound = _magnitude(limit)
                kept = any(_magnitude(g) <= bound if op == "<=" else _magnitude(g) >= bound for g in got)
                out.append((item.text + ("" if kept else f" (script: {', '.join(sorted(set(got))[:3])})"),
                            1.0 if kept else 0.0))
            continue
        tokens = _tokens(item.text)
        if item.kind != "setting" or len(tokens) != 2 or not _VALUE_KEY.fullmatch(tokens[0]):
            continue
        key, want = tokens
        if (re.fullmatch(r"<[\w-]+>|\.\.\.|\*", want) or keys.get(key.lower(), 0) > 1 or key.lower() in _COMMANDS
                or key.lower() in _NOT_KEYS or not _value_like(want)):
            continue
        got = _assigned(key, view)
        if got:
            same = any(_same_value(g, want) for g in got)
            out.append((item.text + ("" if same else f" (script: {', '.join(sorted(set(got))[:3])})"),
                        1.0 if same else 0.0))
    return out


# Prose: the words a tip shares with any text about system administration carry nothing.
_PROSE_STOP: Final[frozenset[str]] = frozenset({
    "about", "above", "across", "after", "again", "against", "along", "already", "also", "although",
    "always", "among", "another", "anything", "around", "because", "been", "before", "being", "below",
    "between", "both", "cannot", "could", "does", "doing", "done", "down", "during", "each", "either",
    "else", "enough", "even", "ever", "every", "fails", "failing", "following", "from", "further",
    "have", "having", "here", "however", "into", "itself", "just", "keep", "keeps", "least", "less",
    "like", "longer", "made", "make", "makes", "many", "might", "more", "most", "much", "must", "need",
    "needs", "never", "next", "none", "only", "other", "otherwise", "over", "own", "part", "place",
    "rather", "really", "same", "several", "should", "since", "some", "something", "still", "such",
    "sure", "take", "takes", "than", "that", "their", "them", "then", "there", "these", "they", "thing",
    "things", "this", "those", "though", "through", "together", "under", "unless", "until", "upon",
    "used", "uses", "using", "very", "want", "wants", "were", "what", "when", "where", "whether",
    "which", "while", "whole", "will", "with", "within", "without", "would", "your", "yours", "first",
    "last", "script", "scripts", "check", "checks", "checked", "file", "files", "setting", "settings",
    "value", "values", "change", "changed", "changes", "changing", "system", "systems", "rule", "rules",
    "line", "lines", "config", "configuration", "fix", "fixes", "host", "hosts", "service", "services",
    "command", "commands", "instead", "directly", "current", "currently", "right", "away", "later",
    "ensure", "verify", "verified", "write", "writes", "written", "persistent", "runtime", "live",
    "reboot", "boot",
})


def _prose_words(text: str) -> set[str]:
    """A tip's content words (four letters or more, not common prose), cut to a five-letter stem so
    "labelling" meets "label" and "restarting" meets "restart"."""
    words = re.findall(r"[A-Za-z][A-Za-z_-]{3,}", _BACKTICK.sub(" ", text))
    return {w.lower()[:5] for w in words if w.lower() not in _PROSE_STOP and w.lower() not in _STOP}


def _prose_overlap(tip: TipItems, view: ScriptView) -> float:
    """Share of the tip's content words found on the script's executable lines (comments and
    messages excluded)."""
    words = set(tip.prose)
    if not words:
        return 0.0
    stems = {w[:5] for line in view.actions for w in re.findall(r"[a-z][a-z_-]{3,}", line.lower())}
    return len(words & stems) / len(words)


def _best_of_groups(matches: list[tuple[Item, float]]) -> list[tuple[Item, float]]:
    out: list[tuple[Item, float]] = []
    best: dict[int, int] = {}
    for item, m in matches:
        if item.group < 0:
            out.append((item, m))
        elif item.group not in best:
            best[item.group] = len(out)
            out.append((item, m))
        elif m > out[best[item.group]][1]:
            out[best[item.group]] = (item, m)
    return out


def agreement(tip: TipItems, view: ScriptView) -> Features:
    """How the script's executable text agrees with the tip, with the evidence item by item."""
    prescribed = [(item, _match(item, view)) for item in tip.prescribed]
    # A warned command is done only when all of it is ("chmod -R", not any chmod).
    warned = [(item, m if m == 1.0 or item.kind not in {"command", "setting"} else 0.0)
              for item in tip.warned for m in [_match(item, view, warned=True)]]
    specific = [(i, m) for i, m in prescribed if i.kind in {"command", "path", "setting", "bound"}]
    # Alternatives count once, by the best of them (the evidence keeps every one).
    every = prescribed
    prescribed = _best_of_groups(prescribed)
    specific = _best_of_groups(specific)
    warned_specific = [(i, m) for i, m in warned if i.kind in {"command", "path", "setting"}]
    value_checks = _values(tip, view)
    order_checks = _order(tip, view)
    values = {
        "prescribed_share": sum(m for _, m in prescribed) / len(prescribed) if prescribed else 0.0,
        "prescribed_specific": sum(m for _, m in specific) / len(specific) if specific else 0.0,
        "prescribed_best": max((m for _, m in specific), default=0.0),
        "prescribed_missing": 1.0 if specific and all(m < 0.5 for _, m in specific) else 0.0,
        "warned_share": sum(m for _, m in warned) / len(warned) if warned else 0.0,
        "warned_any": max((m for _, m in warned_specific), default=0.0),
        "no_items": 0.0 if prescribed or warned else 1.0,
        "value_conflict": 1.0 if any(m == 0.0 for _, m in value_checks) else 0.0,
        "order_broken": 1.0 if any(m == 0.0 for _, m in order_checks) else 0.0,
        "prose_overlap": _prose_overlap(tip, view) if not specific else 0.0,
    }
    # Values and order are evidence too, beside the items: ("value", "ClientAliveCountMax 1
    # (script: 0)", 0.0) and ("order", "sshd -t before restart or reload", 1.0).
    evidence = {
        "signal_version": SIGNAL_VERSION,
        "prescribed": [{**asdict(i), "matched": m} for i, m in every]
        + [{"kind": "value", "text": t, "matched": m} for t, m in value_checks]
        + [{"kind": "order", "text": t, "matched": m} for t, m in order_checks],
        "warned": [{**asdict(i), "matched": m} for i, m in warned],
    }
    return Features(values, evidence)
