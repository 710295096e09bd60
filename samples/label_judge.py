"""An OpenAI-compatible server that answers the judge's question from the sample's gold labels.

It stands in for a perfect LLM judge in the demo: `ctxgraph score` talks to it over the same
`/v1/chat/completions` protocol (structured output, strict verdicts) as to vLLM, and each answer is
the hand-written label of that (tip, script) pair from `samples/stig/gold_labels.csv`, with its note
as the reasoning. It shows what follow-weighted credit does when the judge is right; it says nothing
about how well any real model judges (`ctxgraph evaluate` measures that).

    python samples/label_judge.py --port 8765     # then CTXGRAPH_JUDGE_URL=http://127.0.0.1:8765/v1
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scorer"))

from ctxgraph.judge_prompt import neutralise  # noqa: E402  (the same escaping the client applies)

MODEL = "gold-labels"
BLOCK = re.compile(r"<<<TIP\n(?P<tip>.*?)\nTIP>>>.*?<<<SCRIPT\n(?P<script>.*?)\nSCRIPT>>>", re.DOTALL)


def key(tip: str, script: str) -> str:
    return hashlib.sha256(f"{tip}\x00{script}".encode()).hexdigest()


def load_labels(sample: Path) -> dict[str, tuple[bool, str]]:
    bodies = {}
    for line in (sample / "tips.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            item = json.loads(line)
            bodies[item["tip_ref"]] = item["body"]
    scripts = {}
    for log in sorted(sample.glob("run-*.jsonl")):
        for line in log.read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            if item.get("type") == "attempt" and item.get("fix_script"):
                scripts[(item["run_id"], item["rule_id"], int(item["attempt_number"]))] = item["fix_script"]
    answers = {}
    with (sample / "gold_labels.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            script = scripts[(row["run_id"], row["rule_id"], int(row["attempt_number"]))]
            answers[key(neutralise(bodies[row["tip_ref"]]), neutralise(script))] = (
                row["followed"].strip().lower() == "true", row.get("note") or "")
    return answers


def make_handler(answers: dict[str, tuple[bool, str]]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

        def _send(self, status: int, body: dict) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:  # noqa: N802
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            match = BLOCK.search(request["messages"][-1]["content"])
            answer = answers.get(key(match["tip"], match["script"])) if match else None
            if answer is None:
                content = "No gold label for this pair."  # the client records it as unparseable
            else:
                content = json.dumps({"followed": answer[0], "reasoning": f"gold label: {answer[1]}"})
            self._send(200, {"id": "gold", "object": "chat.completion", "model": MODEL,
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": content}}]})

    return Handler


def main() -> int:
    parser = argparse.ArgumentParser(description="Serve the sample's gold labels as an OpenAI-compatible judge.")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--sample", type=Path, default=ROOT / "samples" / "stig")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(load_labels(args.sample)))
    print(f"label judge on http://127.0.0.1:{args.port}/v1", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
