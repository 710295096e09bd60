"""The judge timeout bounds a whole request, against a server that trickles its answer byte by byte.

httpx's own timeouts bound each read: a server that sends one byte every fraction of a second never
trips them. Each trickle here would deliver a complete, valid answer if the client waited for it; the
tests assert that the client gave up first (a timeout outcome, and the server cut off mid-answer).
"""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from ctxgraph.judge import JudgeClient, JudgeError, list_models

PROMPT = """Judge whether the script followed the tip.
<!-- ctxgraph:user-message -->
<<<TIP
{{tip}}
TIP>>>
<<<SCRIPT
{{script}}
SCRIPT>>>
"""

VERDICT = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": json.dumps(
    {"followed": True, "reasoning": "trickled"})}, "finish_reason": "stop"}]}).encode()
MODELS = json.dumps({"object": "list", "data": [{"id": "trickle-model", "object": "model"}]}).encode()


class TrickleServer:
    """Answers every request with a complete HTTP response, sent ``gap`` seconds per byte.

    ``head_too`` trickles the status line and headers as well, not only the body. ``sent`` and
    ``total`` say how far the last answer got before the client hung up.
    """

    def __init__(self, body: bytes, gap: float, head_too: bool = False) -> None:
        self.body, self.gap, self.head_too = body, gap, head_too
        self.sent = 0
        self.total = 0
        self.finished = threading.Event()
        self._stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> TrickleServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._sock.close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            with conn:
                self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        request = b""
        while b"\r\n\r\n" not in request:
            data = conn.recv(65536)
            if not data:
                return
            request += data
        head, _, rest = request.partition(b"\r\n\r\n")
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(rest) < length:
            rest += conn.recv(65536)
        header = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                  b"Content-Length: " + str(len(self.body)).encode() + b"\r\n\r\n")
        self.sent, self.total = 0, len(header) + len(self.body)
        try:
            if not self.head_too:
                conn.sendall(header)
                self.sent = len(header)
            for byte in (header if self.head_too else b"") + self.body:
                if self._stop.is_set():
                    return
                conn.sendall(bytes([byte]))
                self.sent += 1
                time.sleep(self.gap)
        except OSError:
            return  # the client hung up: what the deadline is for
        self.finished.set()


def judge_once(client: JudgeClient):
    import asyncio

    return asyncio.run(client.judge("Use sshd -t before a restart.", "sshd -t && systemctl restart sshd"))


@pytest.mark.parametrize("head_too", [False, True], ids=["body", "headers and body"])
def test_a_trickling_judge_is_cut_off_at_the_timeout(head_too: bool) -> None:
    # 0.05 s a byte: each read is far inside the 1 s timeout, the whole answer (~8 s) far outside it.
    with TrickleServer(VERDICT, gap=0.05, head_too=head_too) as server:
        client = JudgeClient(server.base_url, "trickle-model", PROMPT, timeout=1.0, max_retries=0)
        outcome = judge_once(client)
        sent, total = server.sent, server.total
    assert outcome.verdict is None
    assert (outcome.error, outcome.transient, outcome.attempts) == ("timeout", True, 1)
    assert "no whole answer within 1.0s" in (outcome.detail or "")
    assert sent < total and not server.finished.is_set()


def test_a_retry_after_a_trickle_gets_a_deadline_of_its_own() -> None:
    with TrickleServer(VERDICT, gap=0.05) as server:
        client = JudgeClient(server.base_url, "trickle-model", PROMPT, timeout=0.5, max_retries=1,
                             backoff_base=0.01)
        outcome = judge_once(client)
    assert (outcome.error, outcome.attempts) == ("timeout", 2)
    assert "gave up after 2 requests" in (outcome.detail or "")


def test_a_server_that_answers_in_time_still_gets_its_verdict() -> None:
    # The same trickle, fast enough to finish (~0.2 s) inside the deadline.
    with TrickleServer(VERDICT, gap=0.001) as server:
        client = JudgeClient(server.base_url, "trickle-model", PROMPT, timeout=30.0, max_retries=0)
        outcome = judge_once(client)
    assert outcome.verdict is not None and outcome.verdict.reasoning == "trickled"


def test_listing_models_from_a_trickling_server_is_cut_off_at_the_timeout() -> None:
    with TrickleServer(MODELS, gap=0.05) as server:
        with pytest.raises(JudgeError, match="no whole answer within 1.0s"):
            list_models(server.base_url, timeout=1.0)
        assert server.sent < server.total
    with TrickleServer(MODELS, gap=0.001) as server:
        assert list_models(server.base_url, timeout=30.0) == ["trickle-model"]
