"""Reading a tip: what it prescribes, what it forbids, and the order it states."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Final


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
    text: str = ""  # the tip as read (bounded_tip)


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
    tip.text = text
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


# Values a setting takes that are plain words; any other plain word after a key is prose
# ("a low MaxAuthTries breaks clients").
_WORD_VALUES: Final[frozenset[str]] = frozenset({
    "yes", "no", "on", "off", "true", "false", "enabled", "disabled", "enforcing", "permissive", "none",
    "all", "always", "never", "any", "auto", "strict", "required", "optional", "deny", "allow",
    "accept", "reject", "drop", "persistent", "volatile",
})
_NOT_KEYS: Final[frozenset[str]] = frozenset({"select", "set", "alter", "create", "grant", "show", "use", "run"})


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


def _octal(symbolic: str) -> str:
    """``u=r,go=`` as ``0400``: each clause sets its classes' bits (no class: all three)."""
    bits = {"u": 0, "g": 0, "o": 0}
    for clause in symbolic.split(","):
        who, _, perms = clause.partition("=")
        value = (4 if "r" in perms else 0) + (2 if "w" in perms else 0) + (1 if "x" in perms else 0)
        for cls in (who.replace("a", "ugo") or "ugo"):
            bits[cls] = value
    return f"0{bits['u']}{bits['g']}{bits['o']}"
