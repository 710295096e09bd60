"""A scripted, real local HTTP server that speaks enough of the OpenAI API to test the judge client.

It listens on 127.0.0.1 (a free port), answers ``POST /v1/chat/completions`` and ``GET /v1/models``,
and records every request it receives. What it answers is scripted per test:

- ``server.push(action, ...)`` queues actions, consumed one per chat request, in order;
- ``server.responder = fn`` answers with ``fn(request)`` once the queue is empty (for concurrent tests);
- ``server.accept_formats`` lists the ``response_format`` types the server accepts (``None`` meaning
  "no response_format"); a request with any other type is rejected with ``reject_status`` (400) and
  consumes nothing, so format negotiation can be tested on its own.

Actions: :func:`verdict`, :func:`content`, :func:`http_error`, :func:`slow`, :func:`drop`,
:class:`Reply` (any status, body and headers; a ``bytes`` body is sent as it is) and :class:`Streamed`
(a body of unannounced length, sent chunk by chunk as a generator makes it, so a huge answer costs the
test no memory; ``server.streamed_bytes`` counts what went out before the client hung up).

Use it as a context manager (``with StubServer() as server: ...``); it stops cleanly even while a
handler is sleeping in a :func:`slow` action.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """Answer with this status, JSON (dict/list) or text body, and headers."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Slow:
    """Wait ``delay`` seconds (or until the server stops), then perform ``then``."""

    delay: float
    then: Action


@dataclass
class Drop:
    """Close the connection without sending any response."""


@dataclass
class Streamed:
    """Answer with this status and a chunked body made by ``chunks()`` as it is sent (no Content-Length)."""

    chunks: Callable[[], Iterable[bytes]]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


Action = Reply | Slow | Drop | Streamed


def completion(text: str | None, model: str = "stub-model") -> dict[str, Any]:
    """Return an OpenAI chat-completion body whose message content is ``text``."""
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
    }


def content(text: str | None) -> Reply:
    """A 200 chat completion whose reply text is exactly ``text`` (prose, bad JSON, anything)."""
    return Reply(200, completion(text))


def verdict(followed: Any, reasoning: Any = "stub reasoning") -> Reply:
    """A 200 chat completion whose reply is the JSON verdict object (any types, for negative tests)."""
    return content(json.dumps({"followed": followed, "reasoning": reasoning}))


def http_error(status: int, message: str = "stub error", headers: dict[str, str] | None = None) -> Reply:
    """An error response with an OpenAI-style error body."""
    return Reply(status, {"error": {"message": message, "code": status}}, dict(headers or {}))


def slow(delay: float, then: Action | None = None) -> Slow:
    """Answer after ``delay`` seconds (by default with a followed=true verdict)."""
    return Slow(delay, then if then is not None else verdict(True))


def drop() -> Drop:
    """Drop the connection without answering."""
    return Drop()


@dataclass(frozen=True)
class Request:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # decoded JSON, or the raw text if it was not JSON, or None for GET

    @property
    def response_format(self) -> Any:
        return self.body.get("response_format") if isinstance(self.body, dict) else None

    @property
    def format_type(self) -> str | None:
        fmt = self.response_format
        return fmt.get("type") if isinstance(fmt, dict) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", []) if isinstance(self.body, dict) else []


class StubServer:
    """The scripted server; see the module docstring."""

    def __init__(
        self,
        actions: Iterable[Action] = (),
        *,
        models: Iterable[str] = ("stub-model",),
        accept_formats: Iterable[str | None] = ("json_schema", "json_object", None),
        reject_status: int = 400,
        responder: Callable[[Request], Action] | None = None,
    ) -> None:
        self.models = list(models)
        self.accept_formats = set(accept_formats)
        self.reject_status = reject_status
        #: Body of a rejection, when a test needs a particular server's wording (e.g. llama.cpp's).
        self.reject_body: Any = None
        self.responder = responder
        #: What ``GET /v1/models`` answers instead of the model list, when a test sets it.
        self.models_action: Action | None = None
        self.requests: list[Request] = []
        self.in_flight = 0
        self.max_in_flight = 0
        #: Body bytes of Streamed answers written to the socket (the kernel buffers some the client never read).
        self.streamed_bytes = 0
        self._queue: deque[Action] = deque(actions)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.stub = self
        # A short poll interval keeps stop() (and so each test's teardown) fast.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> StubServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting --------------------------------------------------------------------------------

    def push(self, *actions: Action) -> None:
        with self._lock:
            self._queue.extend(actions)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def chat_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_action(self, request: Request) -> Action:
        if request.format_type not in self.accept_formats:
            if self.reject_body is not None:
                return Reply(self.reject_status, self.reject_body)
            return http_error(
                self.reject_status,
                f"response_format type {request.format_type!r} is not supported by this stub",
            )
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return self.responder(request)
        return http_error(500, "stub: no scripted response left")

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default backlog of 5 drops SYNs under concurrent tests: a 1 s client stall each.
    request_queue_size = 128
    stub: StubServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out close their end while a slow handler still writes: expected, quiet.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle on, keep-alive requests stall ~40 ms.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature from the base
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        stub = self.server.stub
        stub._record(Request("GET", self.path, dict(self.headers), None))
        if self.path.rstrip("/") == "/v1/models" and stub.models_action is not None:
            self._perform(stub.models_action)
        elif self.path.rstrip("/") == "/v1/models":
            data = [{"id": m, "object": "model", "owned_by": "stub"} for m in stub.models]
            self._send(Reply(200, {"object": "list", "data": data}))
        else:
            self._send(http_error(404, f"no route {self.path}"))

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        stub = self.server.stub
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", errors="replace")
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw
        request = Request("POST", self.path, dict(self.headers), body)
        stub._record(request)
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(http_error(404, f"no route {self.path}"))
            return
        stub._enter()
        try:
            self._perform(stub._next_action(request))
        finally:
            stub._leave()

    def _perform(self, action: Action) -> None:
        stub = self.server.stub
        while isinstance(action, Slow):
            if stub._stop.wait(action.delay):
                self._drop()
                return
            action = action.then
        if isinstance(action, Drop):
            self._drop()
        elif isinstance(action, Streamed):
            self._stream(action)
        else:
            self._send(action)

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _stream(self, streamed: Streamed) -> None:
        stub = self.server.stub
        self.close_connection = True
        try:
            self.send_response(streamed.status)
            self.send_header("Content-Type", streamed.headers.get("Content-Type", "application/json"))
            self.send_header("Transfer-Encoding", "chunked")
            for name, value in streamed.headers.items():
                if name.lower() != "content-type":
                    self.send_header(name, value)
            self.end_headers()
            for chunk in streamed.chunks():
                if stub._stop.is_set():
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                with stub._lock:
                    stub.streamed_bytes += len(chunk)
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client hung up mid-answer: what these tests want to see

    def _send(self, reply: Reply) -> None:
        if isinstance(reply.body, bytes):
            payload = reply.body
            ctype = "application/json"
        elif isinstance(reply.body, (dict, list)):
            payload = json.dumps(reply.body).encode("utf-8")
            ctype = "application/json"
        else:
            payload = ("" if reply.body is None else str(reply.body)).encode("utf-8")
            ctype = "text/plain; charset=utf-8"
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.headers.get("Content-Type", ctype))
            self.send_header("Content-Length", str(len(payload)))
            for name, value in reply.headers.items():
                if name.lower() != "content-type":
                    self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            self.close_connection = True
