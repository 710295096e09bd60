#!/usr/bin/env bash
# The judge cascade on the demo's two runs (samples/stig run-6 and run-7), with the demo's label judge
# (samples/label_judge.py answers from the gold labels): judge calls saved and agreement with asking
# the judge everywhere, for the pass's check of the band as shipped and with --cascade-check 0, and
# as docs/run-log.md advises a skill to run: run-6 judged everywhere, `ctxgraph calibrate` on its verdicts,
# then run-7 with the cascade (counted on run-7's labels alone), once from the default calibration
# (whose labelled pool holds these runs' gold labels, so this figure is flattered; the held-out
# measurement of calibrating from the default is bench/follow_signal_auc.py's) and once
# `--from-scratch`.
# Each variant loads and scores both runs into a fresh database of its own, dropped afterwards, cloned
# from one deployed template (a deploy is about 8 s; a clone under a second).
# Usage: bash bench/cascade_demo.sh (from make bench, part 4; needs the embedded PostgreSQL running).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/db-env.sh
unset DATABASE_URL
sample=samples/stig
ctxgraph=.venv/bin/ctxgraph
export HF_HUB_OFFLINE=1

port=$(.venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
judge_log=$(mktemp)
.venv/bin/python samples/label_judge.py --port "$port" >"$judge_log" 2>&1 &
judge_pid=$!
db=ctxgraph_bench_cascade_$$
template=ctxgraph_bench_cascade_template_$$
trap 'kill "$judge_pid" 2>/dev/null || true; drop_database "$db" >/dev/null 2>&1 || true; drop_database "$template" >/dev/null 2>&1 || true; rm -f "$judge_log"' EXIT
create_database "$template"
sqitch deploy --quiet "db:pg:$template" >/dev/null
for _ in $(seq 50); do
  .venv/bin/python -c "import httpx; httpx.get('http://127.0.0.1:$port/v1/models').raise_for_status()" 2>/dev/null && break
  sleep 0.2
done

printf '%-40s %8s %8s %12s %10s\n' "cascade on the demo's runs" labels decided "wrong there" agreement
for check in default 0 calibrated scratch; do
  drop_database "$db" >/dev/null 2>&1 || true
  psql -X -q -d postgres -v ON_ERROR_STOP=1 -c "CREATE DATABASE \"$db\" TEMPLATE \"$template\"" >/dev/null
  check_args=()
  case $check in default | calibrated | scratch) ;; *) check_args=(--cascade-check "$check") ;; esac
  calibrate_args=()
  [ "$check" = scratch ] && calibrate_args=(--from-scratch)
  for run in run-6 run-7; do
    DATABASE_URL=$(url_for "$db") "$ctxgraph" load --skill stig --tips "$sample/tips.jsonl" \
      --log "$sample/$run.jsonl" >/dev/null
    policy=uncertain
    if [ "$check" != default ] && [ "$check" != 0 ] && [ "$run" = run-6 ]; then
      # The skill's first run asks the judge everywhere; its verdicts calibrate the next run's cascade.
      policy=all
    fi
    DATABASE_URL=$(url_for "$db") CTXGRAPH_JUDGE_URL="http://127.0.0.1:$port/v1" "$ctxgraph" score --skill stig \
      --run "$run" --log "$sample/$run.jsonl" --judge-policy "$policy" "${check_args[@]}" --quiet >/dev/null
    if [ "$check" != default ] && [ "$check" != 0 ] && [ "$run" = run-6 ]; then
      DATABASE_URL=$(url_for "$db") "$ctxgraph" calibrate --skill stig "${calibrate_args[@]}" >/dev/null
    fi
  done
  # Agreement with asking everywhere: the label judge answers the gold label, so a judged row agrees
  # by construction and a decided row agrees when its probability is on the label's side of 0.5.
  DATABASE_URL=$(url_for "$db") CHECK="$check" .venv/bin/python - <<'PY'
import os
import sys
from pathlib import Path

import psycopg

sys.path.insert(0, "scorer")
from ctxgraph.evaluation import read_labels  # noqa: E402
from ctxgraph.scoring_store import Store  # noqa: E402

with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
    labels = read_labels(Path("samples/stig/gold_labels.csv"), Path("samples/stig/tips.jsonl"))
    gold = {label["line"]: label["followed"] for label in labels}
    rows = {rid: (run, status, llm, p) for rid, run, status, llm, p in conn.execute(
        "SELECT r.id, r.run_id, s.llm_status, r.tip_followed_llm, r.follow_probability FROM ctxgraph.tip_retrievals AS r"
        " JOIN ctxgraph.retrieval_scores AS s ON s.skill = r.skill AND s.retrieval_id = r.id WHERE r.skill = 'stig'")}
    # Calibrated on run-6's verdicts: run-7 is the run the cascade decides, so it alone is counted.
    counted = {"run-7"} if os.environ["CHECK"] in ("calibrated", "scratch") else {"run-6", "run-7"}
    n = agree = decided = wrong = 0
    for line, rid in Store(conn).resolve_labels("stig", labels):
        run, status, llm, p = rows[rid]
        if run not in counted:
            continue
        n += 1
        if status == "decided_by_signal":
            decided += 1
            ok = p is not None and (p >= 0.5) == gold[line]
            wrong += not ok
        else:
            ok = llm == gold[line]
        agree += ok
check = os.environ["CHECK"]
name = {"default": "check of the band as shipped", "calibrated": "run-7, calibrated on run-6 (from default)",
        "scratch": "run-7, calibrated on run-6 (from scratch)"}.get(
    check, f"--cascade-check {check}")
print(f"{name:<40} {n:>8} {decided:>4} {decided / n:>3.0%} {wrong:>12} {agree / n:>10.1%}")
PY
done
