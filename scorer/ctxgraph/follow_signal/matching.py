"""Agreement: each item of a tip looked for in what the script does."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Final

from ctxgraph.follow_signal.setting_level import SETTING_FEATURES, setting_features, tip_facts
from ctxgraph.follow_signal.shell import read_script

from ctxgraph.follow_signal.scripts import (
    _FILE_REDIRECT,
    ScriptView,
    _command_names,
    _command_runs,
    _program,
    _subcommand_kept,
)
from ctxgraph.follow_signal.tips import (
    _COMMANDS,
    _NOT_KEYS,
    _WORD_VALUES,
    Item,
    TipItems,
    _magnitude,
    _octal,
)

# parsed-2: a restart of the tip's service where the tip says to reload instead is forbidden_done
# (parsed-1 did not read it); parsed-1: the script also read by the shell parser and matched at the
# setting level (setting_level.SETTING_FEATURES); lexical-5 read it with regular expressions only.
SIGNAL_VERSION: Final[str] = "parsed-2"

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
    *SETTING_FEATURES,       # the same tip and script at the setting level (setting_level.py)
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
    facts = view.facts if view.facts is not None else read_script(view.text)
    structured, found = setting_features(tip_facts(tip.prescribed, tip.warned, tip.text), facts)
    values.update(structured)
    evidence = {
        "signal_version": SIGNAL_VERSION,
        "settings": found,
        "prescribed": [{**asdict(i), "matched": m} for i, m in every]
        + [{"kind": "value", "text": t, "matched": m} for t, m in value_checks]
        + [{"kind": "order", "text": t, "matched": m} for t, m in order_checks],
        "warned": [{**asdict(i), "matched": m} for i, m in warned],
    }
    return Features(values, evidence)
