"""The judge's prompt format: prompt files, the messages built from them, the verdict read from a reply.

The judge is asked for ``{"followed": bool, "reasoning": str}`` (:data:`SCHEMA`). Prompt files live at
``scorer/ctxgraph/prompts/<skill>/tip_follow_judge.md``. A file has two parts separated by
a line that is exactly :data:`USER_MARKER`: everything above is the system message (instructions and
few-shot examples, sent verbatim), everything below is the user-message template, which must hold the
placeholders ``{{tip}}`` and ``{{script}}`` once each, each inside its delimiter block
(``<<<TIP`` ... ``TIP>>>``, ``<<<SCRIPT`` ... ``SCRIPT>>>``). The tip and the script are untrusted:
delimiter look-alikes inside them are replaced by inert markers before they are placed in the template
(:func:`neutralise`), and only the model's reply is ever parsed, strictly (:func:`parse_verdict`). A
verdict keeps at most :data:`MAX_REASONING_CHARS` of its reasoning (:func:`bound_reasoning`).

The transport (the client that asks an OpenAI-compatible server, its retries, deadlines and bounded
reads) is :mod:`ctxgraph.judge`. This module is a leaf: no SQL, no network, and of ctxgraph it
imports only :mod:`ctxgraph.jsontext`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ctxgraph import jsontext

__all__ = [
    "MAX_REASONING_CHARS",
    "SCHEMA",
    "USER_MARKER",
    "PromptError",
    "Verdict",
    "VerdictParseError",
    "bound_reasoning",
    "build_messages",
    "load_prompt",
    "neutralise",
    "parse_verdict",
    "prompt_hash",
    "split_prompt",
]

#: JSON schema of a verdict, sent to servers that support structured output.
SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "followed": {"type": "boolean"},
        "reasoning": {"type": "string"},
    },
    "required": ["followed", "reasoning"],
    "additionalProperties": False,
}
SCHEMA_NAME: Final = "tip_follow_verdict"

#: Line separating the system part of a prompt file from its user-message template.
USER_MARKER: Final = "<!-- ctxgraph:user-message -->"
PROMPT_FILE: Final = "tip_follow_judge.md"
DEFAULT_PROMPTS_DIR: Final = Path(__file__).resolve().parent / "prompts"

#: Most characters of a verdict's reasoning kept, and so stored in ``ctxgraph.follow_verdicts``: the
#: reasoning is for people reading a verdict, and a longer one is cut (:func:`bound_reasoning`).
MAX_REASONING_CHARS: Final = 4000

_SKILL_RE = re.compile(r"[a-z][a-z0-9_]*\Z")
_PLACEHOLDER_RE = re.compile(r"\{\{(tip|script)\}\}")
_FENCE_RE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL | re.IGNORECASE)


# ---------------------------------------------------------------------------------------------------
# Verdicts
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """The judge's answer: whether the script followed the tip, and why."""

    followed: bool
    reasoning: str


class VerdictParseError(ValueError):
    """The model's reply is not exactly one verdict object; ``reason`` says what was wrong."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse_verdict(text: str) -> Verdict:
    """Return the verdict in ``text`` only if the whole text is one well-typed verdict object.

    Accepted: a JSON object, optionally wrapped in one ````` ```json ````` (or bare ````` ``` `````)
    fence, with surrounding whitespace. ``followed`` must be a JSON boolean and ``reasoning`` a
    JSON string. Extra keys are ignored: a server without schema enforcement may add one
    (``"confidence"``), and they cannot change the two typed fields we read. Everything else raises
    :class:`VerdictParseError`: prose before or after the object, two objects, ``"true"``, ``1``,
    ``null``, a missing key, a key given twice. Nothing is searched for inside prose.
    """
    if not isinstance(text, str):
        raise VerdictParseError(f"reply is {type(text).__name__}, not text")
    body = text.strip()
    if not body:
        raise VerdictParseError("reply is empty")
    if body.startswith("```"):
        fence = _FENCE_RE.fullmatch(body)
        if fence is None:
            raise VerdictParseError("reply starts a code fence but is not exactly one fenced block")
        body = fence.group(1).strip()
    try:
        obj = jsontext.loads(body, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constants)
    except VerdictParseError:
        raise
    except ValueError as exc:
        raise VerdictParseError(f"reply is not one JSON value: {exc}") from None
    if not isinstance(obj, dict):
        raise VerdictParseError(f"reply is a JSON {type(obj).__name__}, not an object")
    if "followed" not in obj:
        raise VerdictParseError('reply has no "followed" key')
    if "reasoning" not in obj:
        raise VerdictParseError('reply has no "reasoning" key')
    followed, reasoning = obj["followed"], obj["reasoning"]
    if not isinstance(followed, bool):
        raise VerdictParseError(f'"followed" must be a JSON boolean, got {json.dumps(followed)}')
    if not isinstance(reasoning, str):
        raise VerdictParseError(f'"reasoning" must be a JSON string, got {json.dumps(reasoning)}')
    if jsontext.text_problem(reasoning) is not None:
        # Free text kept for people: what text cannot hold becomes U+FFFD, the verdict stands.
        reasoning = reasoning.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")
    return Verdict(followed=followed, reasoning=reasoning)


def bound_reasoning(text: str, limit: int = MAX_REASONING_CHARS) -> str:
    """Return ``text`` if it has at most ``limit`` characters, else its start cut so that, with a
    marker saying how long the whole was, it has exactly ``limit`` characters."""
    if len(text) <= limit:
        return text
    marker = f" [... cut: {len(text)} characters in all]"
    if limit <= len(marker):
        return text[:limit]
    return text[: limit - len(marker)] + marker


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    if duplicates:
        raise VerdictParseError(f"reply repeats key(s) {', '.join(map(repr, duplicates))}")
    return dict(pairs)


def _no_constants(name: str) -> Any:
    raise VerdictParseError(f"reply contains {name}, which is not JSON")


# ---------------------------------------------------------------------------------------------------
# Prompts
# ---------------------------------------------------------------------------------------------------


class PromptError(ValueError):
    """A prompt file does not have the shape :func:`split_prompt` requires."""


def load_prompt(skill: str, prompts_dir: str | Path | None = None) -> str | None:
    """Return the text of ``<prompts_dir>/<skill>/tip_follow_judge.md``, or None if the skill has none.

    None means "no judge for this skill" (the caller skips the judge leg). ``skill`` must be a plain
    lower-case identifier, so it can never point outside ``prompts_dir``; otherwise ValueError.
    """
    if not _SKILL_RE.match(skill):
        raise ValueError(f"skill must match {_SKILL_RE.pattern!r}, got {skill!r}")
    path = Path(prompts_dir) if prompts_dir is not None else DEFAULT_PROMPTS_DIR
    try:
        return (path / skill / PROMPT_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def prompt_hash(text: str) -> str:
    """Return the SHA-256 hex digest of the prompt text (UTF-8), its version for provenance."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def split_prompt(prompt_text: str) -> tuple[str, str]:
    """Return (system message, user template) of a prompt file, or raise PromptError if malformed."""
    lines = prompt_text.splitlines(keepends=True)
    marks = [i for i, line in enumerate(lines) if line.strip() == USER_MARKER]
    if len(marks) != 1:
        raise PromptError(f"prompt must contain the line {USER_MARKER!r} exactly once, found {len(marks)}")
    system = "".join(lines[: marks[0]]).strip()
    user = "".join(lines[marks[0] + 1:]).strip()
    if not system:
        raise PromptError("prompt has no system part above the user-message marker")
    if _PLACEHOLDER_RE.search(system):
        raise PromptError("placeholders belong below the user-message marker, not in the system part")
    for name, (opening, closing) in _DELIMITERS.items():
        count = user.count("{{" + name + "}}")
        if count != 1:
            raise PromptError(f"user template must contain {{{{{name}}}}} exactly once, found {count}")
        block = re.search(
            re.escape(opening) + r"\s*\{\{" + name + r"\}\}\s*" + re.escape(closing), user
        )
        if block is None:
            raise PromptError(f"{{{{{name}}}}} must sit between {opening!r} and {closing!r}")
    return system, user


# The real delimiters. In untrusted text, anything that could pass for one is neutralised.
_DELIMITERS: Final = {
    "tip": ("<<<TIP", "TIP>>>"),
    "script": ("<<<SCRIPT", "SCRIPT>>>"),
}
# Delimiter look-alikes are found on a *skeleton* of the text, one character for each of the text's, so
# a match maps back to the exact span it covers and everything else stays verbatim. In the skeleton:
# letters are folded (case, compatibility forms, accents, Cyrillic/Greek/small-capital confusables of
# the letters of TIP and SCRIPT), angle brackets and their look-alikes become "<" or ">" (or a marker
# for a character that reads as two or three of them), and invisible characters (zero-width, format,
# combining marks, fillers) become _IGNORED, which the patterns skip wherever it sits.
_IGNORED = "\x00"
_OPEN2, _OPEN3, _CLOSE2, _CLOSE3 = "\x01", "\x02", "\x03", "\x04"
_SINGLE_OPEN = "<\uff1c\ufe64\u2039\u276e\u27e8\u3008\u2329\u02c2\u1438\u276c\u2770\u29fc\u227a"
_SINGLE_CLOSE = ">\uff1e\ufe65\u203a\u276f\u27e9\u3009\u232a\u02c3\u1433\u276d\u2771\u29fd\u227b"
_DOUBLE_OPEN = "\u00ab\u300a\u27ea\u226a\u2aa1"
_DOUBLE_CLOSE = "\u00bb\u300b\u27eb\u226b\u2aa2"
_TRIPLE_OPEN = "\u22d8\u2af7"
_TRIPLE_CLOSE = "\u22d9\u2af8"
# Letters that pass for those of TIP and SCRIPT, beyond what NFKD and case folding already give.
_CONFUSABLES = {
    "s": "\u0455\u0405\ua731\u13da\uabaa\u01bd",
    "c": "\u0441\u0421\u03f2\u03f9\u1d04\u13df\uabaf\u2ca5\u2ca4",
    "r": "\u0433\u0280\uab47\u13a1\u1d26",
    "i": "\u0456\u0406\u03b9\u0399\u0131\u04cf\u04c0\u026a\u01c0\u13a5\ua647l1|\u2223\u05c0",
    "p": "\u0440\u0420\u03c1\u03a1\u1d18\u13e2\u2ca3\u2ca2",
    "t": "\u0442\u0422\u03c4\u03a4\u1d1b\u13a2\u0167\u0166",
}
# Invisible characters outside the format/combining categories (Hangul fillers, braille blank).
_INVISIBLE = "\u115f\u1160\u3164\uffa0\u2800"
_WORDS = ("tip", "script")
_SPACE = rf"[\s{_IGNORED}]*"
_WORD_RE = "|".join((_IGNORED + "*").join(word) for word in _WORDS)
_OPENERS = f"<{_OPEN2}{_OPEN3}"
_CLOSERS = f">{_CLOSE2}{_CLOSE3}"
# An open look-alike is a run of opening brackets (spaces allowed between them) and the word after it;
# a close look-alike the word and a run of closing brackets after it. The runs are found once each and
# the word looked for at their end: one pattern tried from every bracket of a run re-read the rest of
# the run each time, so a script of 32,000 "<" cost 32 s.
_OPEN_RUN_RE = re.compile(rf"[{_OPENERS}](?:{_SPACE}[{_OPENERS}])*")
_AFTER_OPEN_RE = re.compile(rf"(?P<open_gap>{_SPACE})(?P<open_word>{_WORD_RE})(?![a-z0-9_])")
_CLOSE_RE = re.compile(
    rf"(?<![a-z0-9_])(?P<close_word>{_WORD_RE})(?P<close_gap>{_SPACE})(?P<close>[{_CLOSERS}](?:{_SPACE}[{_CLOSERS}])*)"
)
_ANY_BRACKET_RE = re.compile(
    "[" + re.escape(_SINGLE_OPEN + _SINGLE_CLOSE + _DOUBLE_OPEN + _DOUBLE_CLOSE + _TRIPLE_OPEN + _TRIPLE_CLOSE)
    + "]"
)
_skeleton_table: dict[int, str] | None = None


def _skeleton(text: str) -> str:
    """The text with letters, brackets and invisibles folded as described above; same length."""
    global _skeleton_table
    if _skeleton_table is None:
        _skeleton_table = _build_skeleton_table()
    return text.translate(_skeleton_table)


def _build_skeleton_table() -> dict[int, str]:
    import itertools
    import unicodedata

    table: dict[int, str] = {code: "\x05" for code in range(0x00, 0x05)}  # the markers never come from text
    # Every assigned letter, mark and format character lies below U+30000 or in the tags and
    # variation-selector plane; the rest of the code space holds nothing to fold.
    for code in itertools.chain(range(0x30000), range(0xE0000, 0xE1000)):
        char = chr(code)
        if unicodedata.category(char) in ("Cf", "Mn", "Me", "Cs"):
            table[code] = _IGNORED
            continue
        if char.isspace() or char.isascii() and not char.isalpha():
            continue
        folded = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c)).casefold()
        if len(folded) == 1 and folded in "tipscr<>" and folded != char:
            table[code] = folded
    for char in _INVISIBLE:
        table[ord(char)] = _IGNORED
    for target, chars in _CONFUSABLES.items():
        for char in chars:
            table[ord(char)] = target
    for chars, target in ((_SINGLE_OPEN, "<"), (_SINGLE_CLOSE, ">"), (_DOUBLE_OPEN, _OPEN2), (_DOUBLE_CLOSE, _CLOSE2),
                          (_TRIPLE_OPEN, _OPEN3), (_TRIPLE_CLOSE, _CLOSE3)):
        for char in chars:
            table[ord(char)] = target
    return table


def _brackets(run: str) -> int:
    """How many angle brackets a skeleton's run of brackets reads as."""
    return sum({"<": 1, ">": 1, _OPEN2: 2, _CLOSE2: 2, _OPEN3: 3, _CLOSE3: 3}.get(c, 0) for c in run)


def neutralise(text: str) -> str:
    """Return ``text`` with every delimiter look-alike replaced by an inert marker; the rest verbatim.

    A look-alike is TIP or SCRIPT next to angle brackets, as a reader would see it once invisible
    characters are dropped and look-alike characters read as what they resemble:

    - three or more brackets before or after the word, spaces allowed: ``SCRIPT>>>``,
      ``script >>>``, ``<<< TIP``, ``SCRIPT＞＞＞``, ``SCRIPT»>``;
    - two brackets right after the word (a shortened close): ``SCRIPT>>``, ``TIP>\u200b>``;
    - the word in look-alike letters or with invisible characters inside: Cyrillic ``ЅCRIPT>>>``,
      ``SCR\u200bIPT>>>``, fullwidth or mathematical letters, small capitals, accents.

    It becomes ``[escaped SCRIPT close]`` / ``[escaped TIP open]``, which contains no angle brackets,
    so untrusted text cannot end its block or open a new one. Ordinary shell such as ``cat <<EOF``,
    ``cat <<SCRIPT`` (a two-bracket open opens nothing the real close would not end), ``grep x <<<
    "$v"`` or ``cat $SCRIPT >> log`` is left alone. Nothing is truncated.
    """
    if not _ANY_BRACKET_RE.search(text):
        return text
    skeleton = _skeleton(text)
    out: list[str] = []
    position = 0
    for start, end, word, side, escaped in _lookalikes(skeleton):
        # Left to right and never overlapping, an open before a close at the same place: each span is
        # read once, as one pattern of the two alternatives would.
        if start < position:
            continue
        position_before = position
        position = end
        if escaped:
            out.append(text[position_before:start])
            out.append(f"[escaped {word.replace(_IGNORED, '').upper()} {side}]")
        else:
            out.append(text[position_before:end])
    out.append(text[position:])
    return "".join(out)


def _lookalikes(skeleton: str) -> list[tuple[int, int, str, str, bool]]:
    """Every open and close look-alike of a skeleton as (start, end, word, side, escaped), by start,
    opens first; found in time linear in the skeleton's length."""
    found: list[tuple[int, int, str, str, bool]] = []
    for run in _OPEN_RUN_RE.finditer(skeleton):
        after = _AFTER_OPEN_RE.match(skeleton, run.end())
        if after is not None:
            found.append((run.start(), after.end(), after.group("open_word"), "open", _brackets(run.group()) >= 3))
    for match in _CLOSE_RE.finditer(skeleton):
        count = _brackets(match.group("close"))
        escaped = count >= 3 or (count == 2 and not match.group("close_gap").strip(_IGNORED))
        found.append((match.start(), match.end(), match.group("close_word"), "close", escaped))
    found.sort(key=lambda f: (f[0], f[3] != "open"))
    return found


def build_messages(prompt_text: str, tip: str, script: str) -> list[dict[str, str]]:
    """Return the chat messages for one judgement: system (instructions, few-shots), user (data).

    The tip and script are neutralised, then substituted in one pass, so a tip containing
    ``{{script}}`` stays literal text. They are never truncated.
    """
    system, template = split_prompt(prompt_text)
    return _messages(system, template, tip, script)


def _messages(system: str, template: str, tip: str, script: str) -> list[dict[str, str]]:
    if not isinstance(tip, str) or not isinstance(script, str):
        raise TypeError("tip and script must be str")
    values = {"tip": neutralise(tip), "script": neutralise(script)}
    user = _PLACEHOLDER_RE.sub(lambda m: values[m.group(1)], template)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
