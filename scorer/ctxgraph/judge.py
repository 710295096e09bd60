"""LLM judge: did the Worker's fix script follow a retrieved tip? OpenAI-compatible client and parsing.

The judge asks any OpenAI-compatible ``/chat/completions`` server (vLLM in production, llama.cpp's
server in tests and small set-ups) for ``{"followed": bool, "reasoning": str}`` at temperature 0.

Prompt files live at ``scorer/ctxgraph/prompts/<skill>/tip_follow_judge.md``. A file has two parts separated by
a line that is exactly :data:`USER_MARKER`: everything above is the system message (instructions and
few-shot examples, sent verbatim), everything below is the user-message template, which must hold the
placeholders ``{{tip}}`` and ``{{script}}`` once each, each inside its delimiter block
(``<<<TIP`` ... ``TIP>>>``, ``<<<SCRIPT`` ... ``SCRIPT>>>``). The tip and the script are untrusted:
delimiter look-alikes inside them are replaced by inert markers before they are placed in the template
(:func:`neutralise`), and only the model's reply is ever parsed, strictly (:func:`parse_verdict`).

Failures never raise out of :meth:`JudgeClient.judge`: they come back as a :class:`JudgeOutcome` with a
reason code and a ``transient`` flag, so the scoring pass can retry transient ones on its next run and
record permanent ones.

Answers are bounded: the client reads at most :data:`MAX_ANSWER_BYTES` of any answer (streamed, never
whole) and keeps at most :data:`MAX_REASONING_CHARS` of a verdict's reasoning, so a hostile or broken
server costs neither memory nor storage in proportion to what it sends.

This module is a leaf: no SQL, no imports from other ctxgraph modules.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import random
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx

from ctxgraph import jsontext

__all__ = [
    "MAX_ANSWER_BYTES",
    "MAX_REASONING_CHARS",
    "SCHEMA",
    "USER_MARKER",
    "JudgeClient",
    "JudgeError",
    "JudgeOutcome",
    "PromptError",
    "Verdict",
    "VerdictParseError",
    "bound_reasoning",
    "build_messages",
    "list_models",
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

# Response-format modes, most structured first. Negotiation only ever moves down this list.
MODE_JSON_SCHEMA: Final = "json_schema"
MODE_JSON_OBJECT: Final = "json_object"
MODE_NONE: Final = "none"
MODES: Final = (MODE_JSON_SCHEMA, MODE_JSON_OBJECT, MODE_NONE)

# Reason codes in JudgeOutcome.error.
ERR_HTTP: Final = "http_error"
ERR_TIMEOUT: Final = "timeout"
ERR_CONNECTION: Final = "connection"
ERR_RATE_LIMITED: Final = "rate_limited"
ERR_UNPARSEABLE: Final = "unparseable"
ERR_EMPTY: Final = "empty_response"
# 401, 403, 404: the credentials, the route or the model name are wrong. Not the question's fault,
# so never cached, and not worth retrying within the pass: the next pass, once fixed, asks again.
ERR_CONFIG: Final = "judge_config"
CONFIG_STATUSES: Final = frozenset({401, 403, 404})
# A successful answer past max_answer_bytes: no verdict the client accepts, and at temperature 0 the
# server would send it again, so it is recorded as an unparseable answer (final; its detail says
# "larger than"). ctxgraph.scoring_statuses has no status of its own for it.
ERR_TOO_LARGE: Final = ERR_UNPARSEABLE

#: Most bytes of one answer the client reads (its body, as sent: compressed answers are refused). A
#: verdict is a few hundred tokens (``max_tokens``); an answer past this is from a server that is
#: broken or hostile, and is refused unread rather than held whole in memory. A successful answer past
#: it is ``unparseable`` (no verdict the client accepts, and at temperature 0 the server would send it
#: again); an error answer is cut there (only its first :data:`_DETAIL_MAX` characters are reported).
MAX_ANSWER_BYTES: Final = 1024 * 1024
#: Most characters of a verdict's reasoning kept, and so stored in ``ctxgraph.follow_verdicts``: the
#: reasoning is for people reading a verdict, and a longer one is cut (:func:`bound_reasoning`).
MAX_REASONING_CHARS: Final = 4000
# An error answer (4xx, 5xx) is read only this far: its report needs its first few hundred characters.
_ERROR_BODY_MAX: Final = 64 * 1024

_SKILL_RE = re.compile(r"[a-z][a-z0-9_]*\Z")
_PLACEHOLDER_RE = re.compile(r"\{\{(tip|script)\}\}")
_FENCE_RE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL | re.IGNORECASE)
_DETAIL_MAX = 500


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


# ---------------------------------------------------------------------------------------------------
# Client
# ---------------------------------------------------------------------------------------------------


class JudgeError(RuntimeError):
    """The judge server cannot be used at all (unreachable, no models): a whole-leg failure."""


@dataclass(frozen=True)
class JudgeOutcome:
    """The result of judging one (tip, script) pair: a verdict, or a reason code and whether to retry.

    ``error`` is None exactly when ``verdict`` is set. ``transient`` errors (HTTP, timeout, connection,
    rate limit, and ``judge_config``: HTTP 401, 403 or 404, a misconfigured judge) are worth retrying in
    a later pass; permanent ones (``unparseable``, ``empty_response``, any other 4xx rejection) would
    repeat with the same model and prompt at temperature 0.
    ``attempts`` counts HTTP requests made, ``raw`` is the model's reply text when there was one,
    ``detail`` is a human-readable explanation and ``response_format`` the mode of the last request.
    """

    verdict: Verdict | None
    error: str | None
    transient: bool
    attempts: int
    raw: str | None
    detail: str | None = None
    response_format: str | None = None


class _Rejected(Exception):
    """The server refused the request itself (HTTP 400/422): maybe the response_format, maybe not."""

    def __init__(self, status: int, body: str, attempts: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body
        self.attempts = attempts


class JudgeClient:
    """Judges (tip, script) pairs against one model and prompt; every outcome is returned, never raised.

    Structured output is negotiated once per client: the first request offers
    ``response_format={"type": "json_schema", ...}`` (vLLM, OpenAI); if the server answers 400/422,
    the same request is retried with ``{"type": "json_object", "schema": ...}`` (llama.cpp), then with
    no ``response_format`` (replies are then only strictly parsed). The first mode that gets a 2xx is
    remembered for the client's life and later requests use it directly. A 400/422 in every mode
    before any success (for instance a prompt longer than the context) is that row's permanent
    ``http_error`` and does not change the mode; once a mode is known to work, a 400/422 is simply
    permanent for that row.

    ``timeout`` is one deadline per HTTP request for all of it: connecting, sending and every byte of
    the answer (a server trickling its reply is cut off there; httpx alone bounds only each read).

    429, 5xx, timeouts and connection errors are retried up to ``max_retries`` times with exponential
    backoff plus jitter; a ``Retry-After`` up to ``retry_after_max`` seconds is waited out, a longer one
    ends the retries at once (the next scoring pass will try again).

    Every answer is read as a stream and at most ``max_answer_bytes`` of it (default
    :data:`MAX_ANSWER_BYTES`, 1 MiB): a successful answer past that, announced by its Content-Length or
    found while reading, is refused at once as ``unparseable`` (permanent, not retried). The client
    asks for answers uncompressed (``Accept-Encoding: identity``) and takes a compressed 2xx for a
    server glitch (``http_error``, retried), since its size once inflated is unbounded. A verdict's
    reasoning is cut to ``max_reasoning_chars`` characters (default :data:`MAX_REASONING_CHARS`, 4,000;
    :func:`bound_reasoning`).

    Use ``async with client:`` (or :meth:`judge_many`) to share one connection pool; a bare
    :meth:`judge` opens a short-lived one.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        prompt_text: str,
        *,
        timeout: float = 60.0,
        max_retries: int = 3,
        concurrency: int = 8,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        retry_after_max: float = 30.0,
        max_tokens: int = 256,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
        max_reasoning_chars: int = MAX_REASONING_CHARS,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty name (see list_models)")
        if max_retries < 0 or concurrency < 1 or timeout <= 0 or backoff_base < 0:
            raise ValueError("need max_retries >= 0, concurrency >= 1, timeout > 0, backoff_base >= 0")
        if max_answer_bytes < 1 or max_reasoning_chars < 100:
            raise ValueError("need max_answer_bytes >= 1 and max_reasoning_chars >= 100")
        self._system, self._template = split_prompt(prompt_text)
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.prompt_hash = prompt_hash(prompt_text)
        self.timeout = timeout
        self.max_retries = max_retries
        self.concurrency = concurrency
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.retry_after_max = retry_after_max
        self.max_tokens = max_tokens
        self.max_answer_bytes = max_answer_bytes
        self.max_reasoning_chars = max_reasoning_chars
        self._transport = transport
        self._mode_lock = threading.Lock()
        self._confirmed_mode: str | None = None
        self._http: httpx.AsyncClient | None = None
        self._rng = random.Random()

    # -- provenance -----------------------------------------------------------------------------

    @property
    def response_format_mode(self) -> str | None:
        """The response-format mode the server accepted (``json_schema``, ``json_object``, ``none``),
        or None before any request succeeded."""
        with self._mode_lock:
            return self._confirmed_mode

    # -- connection pool ------------------------------------------------------------------------

    def _new_http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=httpx.Timeout(self.timeout), transport=self._transport,
                                 headers=_PLAIN_ANSWERS)

    async def __aenter__(self) -> JudgeClient:
        if self._http is None:
            self._http = self._new_http()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the shared connection pool, if open."""
        http, self._http = self._http, None
        if http is not None:
            await http.aclose()

    # -- judging ---------------------------------------------------------------------------------

    def messages(self, tip: str, script: str) -> list[dict[str, str]]:
        """Return the exact messages :meth:`judge` sends for this pair."""
        return _messages(self._system, self._template, tip, script)

    async def judge(self, tip: str, script: str) -> JudgeOutcome:
        """Judge one pair; returns a verdict or a reason code, never raises for server trouble."""
        messages = self.messages(tip, script)
        if self._http is not None:
            return await self._judge(self._http, messages)
        async with self._new_http() as http:
            return await self._judge(http, messages)

    async def judge_many(
        self,
        pairs: Sequence[tuple[str, str]],
        progress: Callable[[int, int], None] | None = None,
    ) -> list[JudgeOutcome]:
        """Judge every (tip, script) pair, at most ``concurrency`` at once; outcomes in input order.

        ``progress(done, total)`` is called after each pair completes (from the event loop thread).
        """
        total = len(pairs)
        outcomes: list[JudgeOutcome | None] = [None] * total
        semaphore = asyncio.Semaphore(self.concurrency)
        done = 0

        async def one(index: int, http: httpx.AsyncClient) -> None:
            nonlocal done
            tip, script = pairs[index]
            messages = self.messages(tip, script)
            async with semaphore:
                outcomes[index] = await self._judge(http, messages)
            done += 1
            if progress is not None:
                progress(done, total)

        async def run_all(http: httpx.AsyncClient) -> None:
            await asyncio.gather(*(one(i, http) for i in range(total)))

        if self._http is not None:
            await run_all(self._http)
        else:
            async with self._new_http() as http:
                await run_all(http)
        return [o for o in outcomes if o is not None]

    def judge_many_sync(
        self,
        pairs: Sequence[tuple[str, str]],
        progress: Callable[[int, int], None] | None = None,
    ) -> list[JudgeOutcome]:
        """Blocking :meth:`judge_many` for callers without an event loop; same guarantees."""
        return asyncio.run(self.judge_many(pairs, progress))

    async def _judge(self, http: httpx.AsyncClient, messages: list[dict[str, str]]) -> JudgeOutcome:
        with self._mode_lock:
            confirmed = self._confirmed_mode
        modes = (confirmed,) if confirmed is not None else MODES
        attempts = 0
        rejected: _Rejected | None = None
        for mode in modes:
            try:
                body, n = await self._post_with_retries(http, messages, mode)
            except _Rejected as exc:
                attempts += exc.attempts
                rejected = exc
                continue  # 400/422: try the next, less structured mode (only while negotiating)
            except _Transient as exc:
                return JudgeOutcome(
                    None, exc.code, True, attempts + exc.attempts, None, exc.detail, mode
                )
            except _Permanent as exc:
                return JudgeOutcome(None, ERR_HTTP, False, attempts + exc.attempts, None, exc.detail, mode)
            attempts += n
            with self._mode_lock:
                if self._confirmed_mode is None:
                    self._confirmed_mode = mode
            return self._outcome_from_body(body, attempts, mode)

        assert rejected is not None
        detail = f"HTTP {rejected.status} in every response_format mode tried: {_clip(rejected.body)}"
        if confirmed is not None:
            detail = f"HTTP {rejected.status}: {_clip(rejected.body)}"
        return JudgeOutcome(None, ERR_HTTP, False, attempts, None, detail, modes[-1])

    def _request_body(self, messages: list[dict[str, str]], mode: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": 0,
            "max_tokens": self.max_tokens,
            "stream": False,
        }
        if mode == MODE_JSON_SCHEMA:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": SCHEMA_NAME, "schema": SCHEMA, "strict": True},
            }
        elif mode == MODE_JSON_OBJECT:
            body["response_format"] = {"type": "json_object", "schema": SCHEMA}
        return body

    async def _post_with_retries(
        self, http: httpx.AsyncClient, messages: list[dict[str, str]], mode: str
    ) -> tuple[Any, int]:
        """POST once plus up to max_retries retries; return (decoded body, requests made), the body
        being an :class:`_Oversize` when the answer was past ``max_answer_bytes``."""
        url = f"{self.base_url}/chat/completions"
        payload = self._request_body(messages, mode)
        attempt = 0
        while True:
            attempt += 1
            retry_after: float | None = None
            try:
                # httpx's timeouts bound each read, so a server trickling a byte at a time never trips
                # them: the whole exchange (connect, send, every byte of the answer) gets one deadline.
                response = await asyncio.wait_for(
                    _exchange(http, "POST", url, self.max_answer_bytes, json=payload), self.timeout
                )
            except (httpx.TimeoutException, TimeoutError) as exc:
                code, detail = ERR_TIMEOUT, f"no whole answer within {self.timeout}s ({type(exc).__name__})"
            except httpx.TransportError as exc:
                code, detail = ERR_CONNECTION, f"{type(exc).__name__}: {exc}"
            else:
                status = response.status
                if 200 <= status < 300 and response.cut:
                    # Never read whole: a verdict is a few hundred tokens, this is a broken or hostile
                    # server, and at temperature 0 it would answer the same again.
                    return _Oversize(f"HTTP {status} answer larger than {self.max_answer_bytes} bytes"
                                     f"{response.size_note}: not read past that"), attempt
                if 200 <= status < 300 and response.encoding is not None:
                    # Asked for identity: a compressed answer could inflate past any limit.
                    code = ERR_HTTP
                    detail = f"HTTP {status} with a body in Content-Encoding {response.encoding!r}, not asked for"
                elif 200 <= status < 300:
                    try:
                        return jsontext.loads(response.body), attempt
                    except ValueError:
                        # A 200 that is not JSON is a proxy or server glitch, not the model's answer.
                        code = ERR_HTTP
                        detail = f"HTTP {status} with a body that is not JSON: {_clip(response.text)}"
                elif status in (400, 422):
                    raise _Rejected(status, response.text, attempt)
                elif status >= 500 and mode != MODE_NONE and _names_response_format(response.text):
                    # llama-cpp-python's server answers an unsupported response_format type with
                    # HTTP 500 and a validation error naming the field: a rejection, not an outage.
                    raise _Rejected(status, response.text, attempt)
                elif status == 429 or status >= 500:
                    code = ERR_RATE_LIMITED if status == 429 else ERR_HTTP
                    detail = f"HTTP {status}: {_clip(response.text)}"
                    retry_after = _retry_after_seconds(response.headers.get("retry-after"))
                    if retry_after is not None and retry_after > self.retry_after_max:
                        raise _Transient(
                            code, attempt, f"{detail} (Retry-After {retry_after:.0f}s is too long to wait)"
                        )
                elif status in CONFIG_STATUSES:
                    raise _Transient(ERR_CONFIG, attempt, f"HTTP {status}: {_clip(response.text)}")
                else:
                    raise _Permanent(attempt, f"HTTP {status}: {_clip(response.text)}")
            if attempt > self.max_retries:
                raise _Transient(code, attempt, f"{detail} (gave up after {attempt} requests)")
            await asyncio.sleep(self._backoff(attempt, retry_after))

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter, never shorter than a (small) Retry-After."""
        delay = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
        delay += self._rng.uniform(0, delay / 2)
        if retry_after is not None:
            delay = max(delay, retry_after)
        return delay

    def _outcome_from_body(self, body: Any, attempts: int, mode: str) -> JudgeOutcome:
        if isinstance(body, _Oversize):
            return JudgeOutcome(None, ERR_TOO_LARGE, False, attempts, None, body.detail, mode)
        try:
            message = body["choices"][0]["message"]
            content = message.get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            return JudgeOutcome(
                None, ERR_HTTP, True, attempts, None,
                f"response is not a chat completion: {_clip(json.dumps(body))}", mode,
            )
        if content is None or (isinstance(content, str) and not content.strip()):
            return JudgeOutcome(None, ERR_EMPTY, False, attempts, content, "the model returned no text", mode)
        if not isinstance(content, str):
            return JudgeOutcome(
                None, ERR_UNPARSEABLE, False, attempts, json.dumps(content),
                "message content is not a string", mode,
            )
        try:
            verdict = parse_verdict(content)
        except VerdictParseError as exc:
            return JudgeOutcome(None, ERR_UNPARSEABLE, False, attempts, content, exc.reason, mode)
        if len(verdict.reasoning) > self.max_reasoning_chars:
            verdict = Verdict(verdict.followed, bound_reasoning(verdict.reasoning, self.max_reasoning_chars))
        return JudgeOutcome(verdict, None, False, attempts, content, None, mode)


# Asked of every server: an answer as sent, so that the bytes counted are the bytes held.
_PLAIN_ANSWERS: Final = {"Accept-Encoding": "identity"}


@dataclass(frozen=True)
class _Answer:
    """An HTTP answer read at most a limit's worth: status, headers, the bytes read, whether it was cut."""

    status: int
    headers: httpx.Headers
    body: bytes
    cut: bool
    declared: int | None

    @property
    def encoding(self) -> str | None:
        """The Content-Encoding, when it is anything but identity."""
        value = self.headers.get("content-encoding", "").strip().lower()
        return value if value not in ("", "identity") else None

    @property
    def text(self) -> str:
        """The body as text, for reports (a compressed body is not shown)."""
        if self.encoding is not None:
            return f"({self.encoding}-encoded body, not shown)"
        return self.body.decode("utf-8", errors="replace") + (" [...]" if self.cut else "")

    @property
    def size_note(self) -> str:
        return f" (Content-Length {self.declared})" if self.declared is not None else ""


async def _exchange(http: httpx.AsyncClient, method: str, url: str, limit: int, **request: Any) -> _Answer:
    """Send one request and read at most ``limit`` bytes of a 2xx answer's body (at most
    :data:`_ERROR_BODY_MAX` of any other's), never more: a 2xx announcing more is not read at all.

    The body is streamed raw (not decoded: see :class:`_Answer.encoding`) and the connection closed
    unread past the limit, so what a server sends costs at most ``limit`` bytes of memory.
    """
    async with http.stream(method, url, **request) as response:
        ok = 200 <= response.status_code < 300
        limit = limit if ok else min(limit, _ERROR_BODY_MAX)
        declared = _content_length(response.headers)
        if ok and declared is not None and declared > limit:
            return _Answer(response.status_code, response.headers, b"", True, declared)
        if response.is_stream_consumed:
            # An answer made whole in memory (httpx.MockTransport): nothing left to stream, only to cut.
            body = response.content
            return _Answer(response.status_code, response.headers, body[:limit], len(body) > limit, declared)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_raw():
            if size + len(chunk) > limit:
                chunks.append(chunk[: limit - size])
                return _Answer(response.status_code, response.headers, b"".join(chunks), True, declared)
            chunks.append(chunk)
            size += len(chunk)
        return _Answer(response.status_code, response.headers, b"".join(chunks), False, declared)


def _content_length(headers: httpx.Headers) -> int | None:
    try:
        value = int(headers.get("content-length", ""))
    except ValueError:
        return None
    return value if value >= 0 else None


@dataclass(frozen=True)
class _Oversize:
    """A 2xx answer past the byte limit, in place of its decoded body."""

    detail: str


class _Transient(Exception):
    def __init__(self, code: str, attempts: int, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.attempts = attempts
        self.detail = detail


class _Permanent(Exception):
    def __init__(self, attempts: int, detail: str) -> None:
        super().__init__(detail)
        self.attempts = attempts
        self.detail = detail


def _retry_after_seconds(value: str | None) -> float | None:
    """Parse Retry-After (delta-seconds or HTTP-date) into seconds from now; None if absent or bad."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _names_response_format(body: str) -> bool:
    """True when an error body blames the request's response_format (a validation error)."""
    return "response_format" in body and ("validation" in body.lower() or "literal_error" in body)


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _DETAIL_MAX else text[:_DETAIL_MAX] + "..."


def list_models(
    base_url: str,
    *,
    timeout: float = 10.0,
    transport: httpx.AsyncBaseTransport | None = None,
    max_bytes: int = MAX_ANSWER_BYTES,
) -> list[str]:
    """Return the model ids the server lists at ``GET {base_url}/models``; raise JudgeError otherwise.

    ``timeout`` bounds the whole request (connect, send, every byte of the answer), not each read;
    ``max_bytes`` bounds the answer read (a longer one is a JudgeError, read no further).
    """
    url = f"{base_url.rstrip('/')}/models"

    async def fetch() -> _Answer:
        async with httpx.AsyncClient(timeout=timeout, transport=transport, headers=_PLAIN_ANSWERS) as http:
            return await asyncio.wait_for(_exchange(http, "GET", url, max_bytes), timeout)

    try:
        response = asyncio.run(fetch())
    except (httpx.TimeoutException, TimeoutError) as exc:
        raise JudgeError(f"the judge at {url} gave no whole answer within {timeout}s") from exc
    except httpx.HTTPError as exc:
        raise JudgeError(f"cannot reach the judge at {url}: {type(exc).__name__}: {exc}") from exc
    if response.status != 200:
        raise JudgeError(f"GET {url} answered HTTP {response.status}: {_clip(response.text)}")
    if response.cut:
        raise JudgeError(f"GET {url} answered a model list larger than {max_bytes} bytes{response.size_note}")
    if response.encoding is not None:
        raise JudgeError(f"GET {url} answered in Content-Encoding {response.encoding!r}, which was not asked for")
    try:
        data = jsontext.loads(response.body)["data"]
        ids = [item["id"] for item in data]
    except (ValueError, KeyError, TypeError) as exc:
        raise JudgeError(f"GET {url} did not return an OpenAI model list: {_clip(response.text)}") from exc
    if not all(isinstance(i, str) for i in ids):
        raise JudgeError(f"GET {url} returned non-string model ids")
    unstorable = jsontext.text_problem(ids)
    if unstorable is not None:
        raise JudgeError(f"GET {url} returned a model id that is not storable text: {unstorable}")
    return ids
