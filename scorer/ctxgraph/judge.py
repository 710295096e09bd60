"""LLM judge: did the Worker's fix script follow a retrieved tip? The client that asks the model.

The judge asks any OpenAI-compatible ``/chat/completions`` server (vLLM in production, llama.cpp's
server in tests and small set-ups) for ``{"followed": bool, "reasoning": str}`` at temperature 0.
This module is the transport: :class:`JudgeClient` sends the messages, negotiates the response
format, retries, keeps one deadline per request and reads answers bounded; :func:`list_models` asks
which models a server has. What is sent and how a reply is read (the prompt files, the messages
built from them, the strict parse of a verdict) is :mod:`ctxgraph.judge_prompt`.

Failures never raise out of :meth:`JudgeClient.judge`: they come back as a :class:`JudgeOutcome` with a
reason code and a ``transient`` flag, so the scoring pass can retry transient ones on its next run and
record permanent ones.

Answers are bounded: the client reads at most :data:`MAX_ANSWER_BYTES` of any answer (streamed, never
whole) and keeps at most :data:`~ctxgraph.judge_prompt.MAX_REASONING_CHARS` of a verdict's reasoning,
so a hostile or broken server costs neither memory nor storage in proportion to what it sends.

No SQL; of ctxgraph it imports only :mod:`ctxgraph.judge_prompt` and :mod:`ctxgraph.jsontext`.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import httpx

from ctxgraph import jsontext
from ctxgraph.judge_prompt import (
    MAX_REASONING_CHARS,
    SCHEMA,
    SCHEMA_NAME,
    Verdict,
    VerdictParseError,
    _messages,
    bound_reasoning,
    parse_verdict,
    prompt_hash,
    split_prompt,
)

__all__ = [
    "MAX_ANSWER_BYTES",
    "JudgeClient",
    "JudgeError",
    "JudgeOutcome",
    "list_models",
]

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
# An error answer (4xx, 5xx) is read only this far: its report needs its first few hundred characters.
_ERROR_BODY_MAX: Final = 64 * 1024

_DETAIL_MAX = 500


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
