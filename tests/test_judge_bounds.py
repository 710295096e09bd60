"""The judge client reads a bounded answer and keeps a bounded reasoning (issue 44, finding 4).

A judge that answered valid verdicts with 50 MB of reasoning each drove a pass to 9 GB of memory and
6.3 GB of reasoning in ctxgraph.follow_verdicts. Here the stub answers 20 MB (streamed by a generator,
so the test itself holds little of it) and the tests count the bytes the client pulled off the
connection, through a transport that counts them: an unbounded read shows as 20 MB, a bounded one as
the limit plus at most one network read. Nothing is timed.
"""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from judge_stub_server import Reply, Streamed, StubServer, completion, http_error, verdict

from ctxgraph import judge as judge_mod
from ctxgraph import judge_prompt
from ctxgraph.judge import JudgeClient, JudgeError, JudgeOutcome, list_models
from ctxgraph.judge_prompt import Verdict, load_prompt

PROMPT = load_prompt("stig") or ""
TIP = "Use update-crypto-policies to set SSH MACs; don't edit ssh_config by hand."
SCRIPT = "#!/bin/bash\nupdate-crypto-policies --set FUTURE\n"
HUGE = 20 * 1024 * 1024  # the hostile reasoning: 20 MB
READ_AT_MOST = 2 * 1024 * 1024  # what a bounded client may pull off the connection for it


class CountingTransport(httpx.AsyncBaseTransport):
    """A real HTTP transport that counts the response body bytes the client pulls from the network."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.body_bytes = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(response.status_code, headers=response.headers,
                              stream=_Counted(response.stream, self), extensions=response.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()


class _Counted(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, owner: CountingTransport) -> None:
        self.inner, self.owner = inner, owner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            self.owner.body_bytes += len(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


def make_client(server: StubServer, transport: httpx.AsyncBaseTransport | None = None, **overrides: Any
                ) -> JudgeClient:
    options: dict[str, Any] = {"timeout": 30.0, "max_retries": 2, "backoff_base": 0.01, "transport": transport}
    options.update(overrides)
    return JudgeClient(server.base_url, "stub-model", PROMPT, **options)


def judge_once(client: JudgeClient) -> JudgeOutcome:
    return asyncio.run(client.judge(TIP, SCRIPT))


def streamed_verdict(reasoning_bytes: int, piece: int = 64 * 1024) -> Streamed:
    """A valid chat completion whose verdict's reasoning is ``reasoning_bytes`` of 'x', made as it is sent."""
    head, tail = json.dumps(completion("\x00")).split('"\\u0000"')
    inner_head = json.dumps('{"followed": true, "reasoning": "')[:-1]
    inner_tail = json.dumps('"}')[1:]

    def chunks() -> Iterator[bytes]:
        yield (head + inner_head).encode()
        left = reasoning_bytes
        while left > 0:
            size = min(piece, left)
            yield b"x" * size
            left -= size
        yield (inner_tail + tail).encode()

    return Streamed(chunks)


def announced_verdict(reasoning_chars: int) -> Reply:
    """The same answer sent whole, with its Content-Length announced."""
    body = json.dumps(completion(json.dumps({"followed": True, "reasoning": "x" * reasoning_chars})))
    return Reply(200, body.encode())


def test_the_streamed_answer_is_what_it_claims() -> None:
    # The generator's pieces make one valid completion holding one valid verdict (checked small).
    text = b"".join(streamed_verdict(10, piece=3).chunks()).decode()
    message = json.loads(text)["choices"][0]["message"]["content"]
    assert json.loads(message) == {"followed": True, "reasoning": "x" * 10}


def test_a_huge_streamed_answer_is_cut_off_at_the_limit(stub: StubServer) -> None:
    stub.push(streamed_verdict(HUGE), verdict(True, "never asked"))
    transport = CountingTransport()
    outcome = judge_once(make_client(stub, transport))
    assert transport.body_bytes < READ_AT_MOST  # unbounded: 20 MB
    assert outcome.verdict is None
    assert (outcome.error, outcome.transient, outcome.attempts) == ("unparseable", False, 1)
    assert outcome.detail is not None and "larger than" in outcome.detail
    assert outcome.raw is None
    assert stub.pending == 1  # not asked again: at temperature 0 the answer would be the same
    assert stub.streamed_bytes < HUGE  # the server was cut off mid-answer


def test_an_announced_huge_answer_is_refused_without_reading_it(stub: StubServer) -> None:
    stub.push(announced_verdict(HUGE // 4))
    transport = CountingTransport()
    outcome = judge_once(make_client(stub, transport))
    assert transport.body_bytes < READ_AT_MOST
    assert (outcome.error, outcome.transient) == ("unparseable", False)
    assert outcome.detail is not None and "Content-Length" in outcome.detail


def test_the_limit_is_a_constructor_parameter(stub: StubServer) -> None:
    assert judge_mod.MAX_ANSWER_BYTES == 1024 * 1024
    stub.push(announced_verdict(5_000), announced_verdict(5_000))
    small = make_client(stub, max_answer_bytes=4_000)
    assert judge_once(small).error == "unparseable"
    roomy = make_client(stub, max_answer_bytes=8_000)
    outcome = judge_once(roomy)
    assert outcome.verdict is not None and outcome.verdict.followed is True
    with pytest.raises(ValueError):
        make_client(stub, max_answer_bytes=0)
    with pytest.raises(ValueError):
        make_client(stub, max_reasoning_chars=10)


def test_a_long_reasoning_within_the_answer_limit_is_cut_to_the_stated_length(stub: StubServer) -> None:
    stub.push(announced_verdict(300_000))
    outcome = judge_once(make_client(stub))
    assert outcome.verdict is not None and outcome.verdict.followed is True
    reasoning = outcome.verdict.reasoning
    assert len(reasoning) == judge_prompt.MAX_REASONING_CHARS == 4000
    assert reasoning.startswith("x" * 3000) and reasoning.endswith("[... cut: 300000 characters in all]")


def test_a_short_reasoning_is_kept_whole(stub: StubServer) -> None:
    stub.push(verdict(False, "y" * 4000))
    outcome = judge_once(make_client(stub))
    assert outcome.verdict == Verdict(False, "y" * 4000)


@pytest.mark.parametrize(("text", "limit", "expected"), [
    ("abc", 40, "abc"),
    ("a" * 41, 40, "a" * 8 + " [... cut: 41 characters in all]"),
    ("a" * 100, 10, "a" * 10),  # a limit shorter than the marker: the text alone, cut
])
def test_bound_reasoning(text: str, limit: int, expected: str) -> None:
    bounded = judge_prompt.bound_reasoning(text, limit)
    assert bounded == expected and len(bounded) <= limit


def test_a_huge_error_body_is_read_only_as_far_as_its_report_needs(stub: StubServer) -> None:
    stub.push(Streamed(lambda: (b"e" * 65536 for _ in range(HUGE // 65536)), status=500), verdict(True, "ok"))
    transport = CountingTransport()
    outcome = judge_once(make_client(stub, transport))
    assert transport.body_bytes < READ_AT_MOST
    assert outcome.verdict == Verdict(True, "ok") and outcome.attempts == 2


def test_a_compressed_answer_is_not_inflated(stub: StubServer) -> None:
    # 4 MB of reasoning in about 4 kB of gzip: the byte limit must not count the wire alone.
    body = json.dumps(completion(json.dumps({"followed": True, "reasoning": "x" * (4 * 1024 * 1024)}))).encode()
    bomb = gzip.compress(body)
    del body
    stub.push(Reply(200, bomb, {"Content-Encoding": "gzip"}), verdict(True, "plain"))
    outcome = judge_once(make_client(stub))
    assert outcome.verdict == Verdict(True, "plain") and outcome.attempts == 2
    assert stub.chat_requests()[0].headers.get("Accept-Encoding") == "identity"


def test_list_models_reads_a_bounded_answer(stub: StubServer) -> None:
    stub.models_action = Streamed(lambda: (b" " * 65536 for _ in range(HUGE // 65536)))
    transport = CountingTransport()
    with pytest.raises(JudgeError, match="larger than"):
        list_models(stub.base_url, transport=transport)
    assert transport.body_bytes < READ_AT_MOST


def test_http_errors_within_the_limit_still_report_their_body(stub: StubServer) -> None:
    stub.push(http_error(410, "gone for good"))
    outcome = judge_once(make_client(stub))
    assert (outcome.error, outcome.transient) == ("http_error", False)
    assert outcome.detail is not None and "gone for good" in outcome.detail
