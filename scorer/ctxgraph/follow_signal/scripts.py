"""Reading a script: what its executable lines do, as text to search."""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from ctxgraph.follow_signal.shell import ScriptFacts, read_script

# The most of a script the signal reads: 256 Ki characters, some 50 times the longest fix script of
# the samples, read in about a second. Reading is linear in size and matching is linear in what was
# kept, so a 26 MB script read whole took minutes per tip; past the cap the signal reads the first
# and the last half of it (cut at line breaks), where set-up and the final restart or check are.
MAX_SCRIPT_CHARS: Final[int] = 256 * 1024

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
    # What the shell parser read (:mod:`.shell`): the settings, files and commands matched at the
    # setting level (:mod:`.setting_level`).
    facts: ScriptFacts | None = field(default=None, repr=False, compare=False)
    _spelled: dict[bool, list[tuple[str, str]]] = field(default_factory=dict, init=False, repr=False,
                                                        compare=False)
    _runs: dict[bool, list[set[str]]] = field(default_factory=dict, init=False, repr=False, compare=False)


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
    view = ScriptView(kept, checks, writes, text, frozenset(_words_of(text)), frozenset(commands), actions,
                      order, capped, ignored)
    # The same script as the shell parses it (tree-sitter-bash): commands, files and settings written.
    view.facts = read_script(script)
    return view


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


