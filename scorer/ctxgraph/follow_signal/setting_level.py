"""Matching at the setting level: what a tip names, against what the parsed script does.

The words of a tip and of a script can agree while the script does something else: a script that
sets ``MaxAuthTries 3`` in ``/etc/ssh/sshd_config`` names the file a ``PermitRootLogin no`` tip
names, and one that runs ``sysctl -w`` names the tool a tip forbids using alone. This module
compares structure instead, the tip's side read by :mod:`ctxgraph.follow_signal.tips` and the
script's by :mod:`ctxgraph.follow_signal.shell`:

- a prescribed **setting** (key and value, or a bound on the key's value) is *followed* when the
  script writes that key with a value the tip accepts, through any writer (a heredoc, ``echo`` into
  a file, a ``sed`` substitution, the tool's own setter, a drop-in file: the same effect by another
  route is a follow), and *conflicts* when the last value the script writes to it is one the tip
  does not accept, or the script comments the key out or deletes it;
- a script that writes settings, none of them the tip's keys, into the file the tip names (or into
  any file, when the tip names none) edited *something else*: the same file with another key is not
  a follow;
- a **forbidden** setting, value, command or file (the tip's "never", "instead of", "don't") that
  the script sets, runs or writes is evidence that it ignored the tip;
- a prescribed **command** is run when a reachable command has its name, subcommand and flags; a
  prescribed **file** when the script writes it (or sets its mode or owner).

``comparable`` says whether there was anything to compare at all: a key, file or command of the tip
that the script touches. Where there is not, the calibration falls back on the cosine instead of
reading an absence as a verdict (:mod:`ctxgraph.follow_signal.calibration`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from ctxgraph.follow_signal.shell import ScriptFacts, Setting, normal_key
from ctxgraph.follow_signal.tips import _COMMANDS, _NOT_KEYS, _magnitude, _octal

__all__ = ["SETTING_FEATURES", "TipCommand", "TipFacts", "TipSetting", "setting_features", "tip_facts"]

# The features this module adds to the signal, in order (all in [0, 1]).
SETTING_FEATURES: Final[tuple[str, ...]] = (
    "comparable",          # the script touches a key, file or command the tip names
    "setting_followed",    # share of the tip's prescribed settings the script writes with an accepted value
    "setting_conflict",    # 1 when a prescribed key's last value in the script is one the tip does not accept
    "setting_elsewhere",   # 1 when the script writes settings, none of them the tip's keys (into its file)
    "forbidden_done",      # 1 when the script sets, runs or writes what the tip forbids
    "command_followed",    # share of the tip's prescribed commands a reachable command runs in full
    "file_followed",       # share of the tip's prescribed files the script writes (or sets mode/owner on)
)

_TRUE: Final[frozenset[str]] = frozenset({"yes", "true", "on", "1", "enabled", "enable", "y"})
_FALSE: Final[frozenset[str]] = frozenset({"no", "false", "off", "0", "disabled", "disable", "n"})
_OCTAL = re.compile(r"0?[0-7]{3,4}")
_SYMBOLIC = re.compile(r"[ugoa]{0,4}=[rwx]{0,3}(?:,[ugoa]{0,4}=[rwx]{0,3}){0,5}")
_KEY = re.compile(r"[A-Za-z_][\w.:/-]*")
_PLACEHOLDER = re.compile(r"\.\.\.|…|<[^<>\s]+>")
_PLACEHOLDER_SPLIT = re.compile(r"(\.\.\.|…|<[^<>\s]+>)")
# Programs a tip names the way it names a setting ("`netfilter-persistent save`"), beside the ones
# the tip reader knows as commands.
_COMMAND_LIKE: Final[frozenset[str]] = frozenset({
    "netfilter-persistent", "ufw", "iptables-save", "ip6tables-save", "nft", "exportfs", "grubby",
    "update-grub", "grub2-mkconfig", "dracut", "update-initramfs", "mount", "umount", "swapoff", "modprobe",
    "systemd-tmpfiles", "restorecon", "semodule", "aide", "newaliases", "postmap", "a2enmod", "a2dismod",
    "a2enconf", "a2ensite", "a2dissite", "nginx", "apachectl", "sshd", "visudo", "firewall-cmd", "tuned-adm",
})
# Keys that hold one value whatever a file says twice (the last line wins): file attributes.
_SINGLE_VALUED_HINT: Final[frozenset[str]] = frozenset({"mode", "owner", "group"})
# Keys a tip's setting item may carry that are file attributes, set by chmod/chown/install.
_ATTRIBUTES: Final[frozenset[str]] = frozenset({"mode", "owner", "group"})


@dataclass(frozen=True)
class TipSetting:
    """A key the tip prescribes or forbids: with a value (``value``), a bound (``bound``: '<=' or
    '>=' and a number), or neither (any value; a forbidden key without value forbids setting it)."""

    key: str
    value: str | None = None
    bound: tuple[str, float] | None = None
    group: int = -1


@dataclass(frozen=True)
class TipCommand:
    name: str
    subcommand: str | None = None
    flags: frozenset[str] = frozenset()
    group: int = -1


@dataclass
class TipFacts:
    """A tip at the level the script is read at: settings, files and commands on each side, and
    forbidden values (a word the tip forbids writing as any setting's value: ``no_root_squash``)."""

    settings: list[TipSetting] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    commands: list[TipCommand] = field(default_factory=list)
    forbidden_settings: list[TipSetting] = field(default_factory=list)
    forbidden_files: list[str] = field(default_factory=list)
    forbidden_commands: list[TipCommand] = field(default_factory=list)
    forbidden_values: list[str] = field(default_factory=list)
    # "reload ... rather than restarting", "not a restart", "don't restart X": a restart of the tip's
    # service is the approach it forbids; ``subjects`` are the tip's words a service name must share.
    forbids_restart: bool = False
    subjects: frozenset[str] = frozenset()


def _mode(value: str) -> int | None:
    """A mode as bits: octal, or symbolic made only of assignments (``u=r,go=``); None otherwise."""
    value = value.strip()
    if _OCTAL.fullmatch(value):
        return int(value, 8)
    if _SYMBOLIC.fullmatch(value):
        return int(_octal(value), 8)
    return None


def _plain(value: str) -> str:
    return re.sub(r"\s+", " ", value.strip().strip("'\"`").rstrip(";").strip()).lower()


def accepts(wanted: TipSetting, written: str) -> bool:
    """Whether a written value is one the tip's setting accepts: the same value (booleans by class,
    modes as octal, sizes by magnitude, lists as sets that hold the tip's items), or one within
    its bound; a setting without value or bound accepts any."""
    got = _plain(written)
    if wanted.bound is not None:
        number = _magnitude(got)
        if number is None:
            return False
        op, limit = wanted.bound
        return number <= limit if op == "<=" else number >= limit
    if wanted.value is None:
        return True
    want = _plain(wanted.value)
    if want == got:
        return True
    if _PLACEHOLDER.search(want):
        # "add_header ... always;", "Match Address <bastion-ip>": the tip's placeholders stand for
        # anything, the rest must be there as written.
        pattern = "".join(".*" if _PLACEHOLDER.fullmatch(part) else re.escape(part)
                          for part in _PLACEHOLDER_SPLIT.split(want) if part)
        return re.fullmatch(pattern, got) is not None
    if want in _TRUE or want in _FALSE:
        return (want in _TRUE and got in _TRUE) or (want in _FALSE and got in _FALSE)
    if wanted.key.lower() == "mode":
        # A mode a tip gives is the most it allows: a stricter mode (fewer bits) follows it.
        a, b = _mode(want), _mode(got)
        if a is not None and b is not None:
            return b & ~a == 0
    if _OCTAL.fullmatch(want):
        a, b = _mode(want), _mode(got)
        if a is not None and b is not None:
            return a == b
    a, b = _magnitude(want), _magnitude(got)
    if a is not None and b is not None:
        return a == b
    wanted_items = {p for p in re.split(r"[,\s]+", want) if p}
    got_items = {p for p in re.split(r"[,\s]+", got) if p}
    return len(wanted_items) > 1 and wanted_items <= got_items


def _command_of(text: str, group: int) -> TipCommand | None:
    words = [w for w in re.split(r"\s+", text.strip().strip("`")) if w]
    while words and words[0] in {"sudo", "env", "command", "exec"}:
        words = words[1:]
    if not words or not re.fullmatch(r"[\w./+-]+", words[0]):
        return None
    name = words[0].rsplit("/", 1)[-1]
    flags: set[str] = set()
    subcommand = None
    for word in words[1:]:
        if word.startswith("--"):
            flags.add(word.split("=", 1)[0])
        elif word.startswith("-") and len(word) > 1:
            flags.update(f"-{c}" for c in word[1:] if c.isalpha()) if re.fullmatch(r"-[A-Za-z]+", word) \
                else flags.add(word)
        elif subcommand is None and re.fullmatch(r"[a-z][a-z0-9-]*", word):
            subcommand = word
    return TipCommand(name, subcommand, frozenset(flags), group)


def _setting_of(kind: str, text: str, group: int) -> TipSetting | None:
    if kind == "bound":
        m = re.fullmatch(r"(\S+)\s*(<=|>=)\s*(\S+)", text.strip())
        if not m:
            return None
        limit = _magnitude(m.group(3))
        if limit is None:
            return None
        return TipSetting(m.group(1).rstrip("="), bound=(m.group(2), limit), group=group)
    key, _, value = text.strip().partition(" ")
    key = key.rstrip("=:")
    if not _KEY.fullmatch(key):
        return None
    return TipSetting(key, value.strip() or None, group=group)


_NO_RESTART = re.compile(
    r"\b(?:rather\s+than|instead\s+of|not|never|don'?t|do\s+not|without)\s+(?:an?\s+|the\s+|a\s+full\s+)?"
    r"(?:`?(?:systemctl|service)\s+)?restart(?:ing|s)?\b", re.IGNORECASE)
_SUBJECT_WORD = re.compile(r"[a-z][a-z0-9_-]{3,}")
_NOT_SUBJECTS: Final[frozenset[str]] = frozenset({"restart", "restarting", "reload", "reloading", "systemctl",
                                                  "service"})


def tip_facts(prescribed: list, warned: list, text: str = "") -> TipFacts:
    """The tip's items (:class:`ctxgraph.follow_signal.Item`: kind, text, group) as facts. A
    "setting" whose key is a program (``netfilter-persistent save``, ``ufw allow``) is a command; a
    key the tip gives two values ("ships `X yes`; change it to `X no`") is not checked."""
    facts = TipFacts()
    values_of: dict[str, set[str]] = {}
    for item in prescribed + warned:
        if item.kind == "setting":
            key, _, value = item.text.strip().partition(" ")
            values_of.setdefault(normal_key(key.rstrip("=:")), set()).add(value.strip().lower())
    for items, forbidden in ((prescribed, False), (warned, True)):
        for item in items:
            if item.kind in {"setting", "bound"}:
                key = item.text.strip().split(" ", 1)[0].rstrip("=:")
                if key.lower() in _COMMANDS or key.lower() in _COMMAND_LIKE:
                    command = _command_of(item.text, item.group)
                    if command is not None:
                        (facts.forbidden_commands if forbidden else facts.commands).append(command)
                    continue
                if item.kind == "setting" and (len(values_of.get(normal_key(key), ())) > 1
                                               or key.lower() in _NOT_KEYS):
                    continue  # two values, or SQL read as a setting ("SET PERSIST", "SELECT ...")
                setting = _setting_of(item.kind, item.text, item.group)
                if setting is not None:
                    (facts.forbidden_settings if forbidden else facts.settings).append(setting)
            elif item.kind == "path":
                (facts.forbidden_files if forbidden else facts.files).append(item.text.rstrip("/") or "/")
            elif item.kind == "command":
                command = _command_of(item.text, item.group)
                if command is not None:
                    (facts.forbidden_commands if forbidden else facts.commands).append(command)
            elif forbidden and item.kind == "word" and re.fullmatch(r"[\w.-]*[_.-][\w.-]*", item.text):
                # A compound word the tip forbids (no_root_squash, TLSv1.1): forbidden as a value.
                facts.forbidden_values.append(item.text)
    if _NO_RESTART.search(text):
        facts.forbids_restart = True
        facts.subjects = frozenset(w for w in _SUBJECT_WORD.findall(text.lower())
                                   if w not in _NOT_SUBJECTS)
    return facts


def _restarted(facts: ScriptFacts) -> list[str]:
    """The services the script restarts (not reloads): ``systemctl restart X``, ``service X restart``,
    ``docker restart X``, ``pg_ctl restart``, ``pg_ctlcluster V C restart``."""
    units = []
    for c in facts.commands:
        if not c.reachable:
            continue
        args = [w for w in c.words if not w.startswith("-")]
        if c.name == "systemctl" and c.subcommand in {"restart", "try-restart"}:
            units.extend(args[1:])
        elif c.name == "service" and len(args) >= 2 and args[1] == "restart":
            units.append(args[0])
        elif c.name in {"docker", "podman"} and c.subcommand == "restart":
            units.extend(args[1:])
        elif c.name in {"pg_ctl", "pg_ctlcluster"} and "restart" in args:
            units.append("postgresql")
    return units


def _words(text: str) -> set[str]:
    """The words of a value or a content line, split where config syntax splits them."""
    return {w for w in re.split(r"[,\s()=:;\"'\[\]{}]+", text.lower()) if w}


def _runs(command: TipCommand, facts: ScriptFacts) -> bool:
    return facts.runs(command.name, command.subcommand, command.flags)


def _touches_command(command: TipCommand, facts: ScriptFacts) -> bool:
    return any(c.reachable and c.name == command.name for c in facts.commands)


def _file_attributes(setting: TipSetting, tip_files: list[str], facts: ScriptFacts) -> list[Setting]:
    """The script's writes of a file attribute (mode, owner, group) on one of the tip's files (any
    file, when the tip names none)."""
    found = facts.settings_of(setting.key)
    if not tip_files:
        return found
    return [s for s in found if s.file and any(_same_path(s.file, f) for f in tip_files)]


def _same_path(written: str, named: str) -> bool:
    written, named = written.rstrip("/"), named.rstrip("/")
    return written == named or written.startswith(named + "/")


def _last_values(setting: TipSetting, tip_files: list[str], facts: ScriptFacts) -> list[Setting]:
    """The script's reachable writes of the tip's key, in script order."""
    if setting.key.lower() in _ATTRIBUTES:
        found = _file_attributes(setting, tip_files, facts)
    else:
        found = facts.settings_of(setting.key)
    return sorted(found, key=lambda s: s.line)


def _status(setting: TipSetting, tip_files: list[str], facts: ScriptFacts) -> str:
    """'followed', 'conflict' or 'absent' for one prescribed setting.

    The last write decides where one value replaces another: a later file (a drop-in read after, a
    ``local.conf``) or a later line for the same key, so an accepted value the script then overrides,
    comments out or deletes in that file is a conflict. A key the script writes several times with
    different values into one file is a list (``http_access``, ``Match``, ``Listen``): one accepted
    entry follows it. A removal in another file than the accepted write (the old line taken out of
    the main file, the key set in a drop-in) is a move, not a conflict. A value the script computes
    at run time (``u-x,go-rwx``, ``$VALUE``) says nothing either way."""
    writes = [w for w in _last_values(setting, tip_files, facts)
              if w.removed or _evaluable(setting, w.value)]
    if not writes:
        return "absent"
    kept = [w for w in writes if not w.removed]
    accepted = [w for w in kept if accepts(setting, w.value)]
    if not accepted:
        return "conflict"
    last_accepted = accepted[-1]
    same_file_later = [w for w in writes if w.file == last_accepted.file and w.line > last_accepted.line]
    if any(w.removed for w in same_file_later):
        return "conflict"
    later_files = [w for w in kept if w.line > last_accepted.line and w.file != last_accepted.file]
    if later_files and not accepts(setting, later_files[-1].value):
        return "conflict"
    in_file = {w.value.lower() for w in kept if w.file == last_accepted.file}
    if len(in_file) > 1 and any(not accepts(setting, w.value) for w in same_file_later):
        # One file, one key, several values: a list, unless the key is known to take one value.
        return "followed" if setting.key.lower() not in _SINGLE_VALUED_HINT else "conflict"
    return "followed"


def _evaluable(setting: TipSetting, value: str) -> bool:
    """Whether a written value can be compared with the tip's at all."""
    if "$" in value or "`" in value:
        return False
    if setting.key.lower() == "mode":
        return _mode(value) is not None
    return True


def _best_by_group(statuses: list[tuple[int, float]]) -> list[float]:
    best: dict[int, float] = {}
    single: list[float] = []
    for group, value in statuses:
        if group < 0:
            single.append(value)
        else:
            best[group] = max(best.get(group, 0.0), value)
    return single + list(best.values())


def setting_features(tip: TipFacts, facts: ScriptFacts) -> tuple[dict[str, float], dict]:
    """The :data:`SETTING_FEATURES` values and their evidence (what matched, item by item)."""
    evidence: dict[str, list] = {"settings": [], "commands": [], "files": [], "forbidden": []}
    statuses = []
    conflict = 0.0
    for setting in tip.settings:
        status = _status(setting, tip.files, facts)
        statuses.append((setting.group, 1.0 if status == "followed" else 0.0))
        if status == "conflict":
            conflict = 1.0
        wanted = setting.value or (setting.bound and f"{setting.bound[0]} {setting.bound[1]:g}")
        evidence["settings"].append([setting.key, wanted, status])
    followed_settings = _best_by_group(statuses)
    # A conflict on an alternative the script did not take is no conflict: only when no alternative
    # of that group was followed.
    if conflict and followed_settings and min(followed_settings) == 1.0:
        conflict = 0.0

    tip_keys = {normal_key(s.key) for s in tip.settings if s.key.lower() not in _ATTRIBUTES}
    written = [s for s in facts.settings
               if s.reachable and not s.removed and s.key.lower() not in _ATTRIBUTES]
    if tip.files:
        written = [s for s in written if s.file and any(_same_path(s.file, f) for f in tip.files)]
    elsewhere = float(bool(tip_keys and written) and not any(normal_key(s.key) in tip_keys for s in written))

    forbidden = 0.0
    for setting in tip.forbidden_settings:
        writes = [w for w in _last_values(setting, tip.files, facts) if not w.removed]
        if writes and accepts(setting, writes[-1].value):
            forbidden = 1.0
            evidence["forbidden"].append(["setting", setting.key, setting.value])
    for value in tip.forbidden_values:
        want = value.lower()
        if any(s.reachable and not s.removed
               and (want in _words(s.value) or normal_key(s.key) == normal_key(value))
               for s in facts.settings) or any(
               w.reachable and w.content
               and any(want in _words(line) for line in w.content.lower().splitlines()
                       if not line.lstrip().startswith(("#", ";")))
               for w in facts.files_written):
            forbidden = 1.0
            evidence["forbidden"].append(["value", value])
    for command in tip.forbidden_commands:
        if command.flags or command.subcommand:
            if _runs(command, facts):
                forbidden = 1.0
                evidence["forbidden"].append(["command", command.name, command.subcommand,
                                              sorted(command.flags)])
    if tip.forbids_restart:
        for unit in _restarted(facts):
            stem = re.split(r"[@.]", unit.lower(), maxsplit=1)[0]
            if stem and any(stem == w or stem.startswith(w) or w.startswith(stem) for w in tip.subjects
                            if len(stem) >= 4):
                forbidden = 1.0
                evidence["forbidden"].append(["restart", unit])
                break
    for path in tip.forbidden_files:
        if facts.writes(path):
            forbidden = 1.0
            evidence["forbidden"].append(["file", path])

    command_statuses = []
    for command in tip.commands:
        ran = _runs(command, facts)
        command_statuses.append((command.group, 1.0 if ran else 0.0))
        evidence["commands"].append([command.name, command.subcommand, sorted(command.flags), ran])
    commands_followed = _best_by_group(command_statuses)

    file_statuses = []
    for path in tip.files:
        done = bool(facts.writes(path)) or any(s.file and _same_path(s.file, path) for s in facts.settings
                                               if s.reachable and s.key.lower() in _ATTRIBUTES)
        file_statuses.append(1.0 if done else 0.0)
        evidence["files"].append([path, done])

    touched = (
        any(_last_values(s, tip.files, facts) for s in tip.settings + tip.forbidden_settings)
        or any(facts.writes(p) for p in tip.files + tip.forbidden_files)
        or any(_touches_command(c, facts) for c in tip.commands + tip.forbidden_commands)
        or forbidden > 0
    )
    values = {
        "comparable": 1.0 if touched else 0.0,
        "setting_followed": sum(followed_settings) / len(followed_settings) if followed_settings else 0.0,
        "setting_conflict": conflict,
        "setting_elsewhere": elsewhere,
        "forbidden_done": forbidden,
        "command_followed": sum(commands_followed) / len(commands_followed) if commands_followed else 0.0,
        "file_followed": sum(file_statuses) / len(file_statuses) if file_statuses else 0.0,
    }
    return values, evidence
