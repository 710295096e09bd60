#!/usr/bin/env bash
# make demo: ctxgraph's main job on the bundled sample, in a fresh database "ctxgraph_demo" on the
# embedded cluster (or on DATABASE_URL's server). Loads run-6 through the write path as an agent
# would, scores it, shows what the ranker believes; then run-7 (the cryptography collapse), scores
# it, and prints the audit and the evaluation against the hand-written gold labels.
# Safe to run again: the demo database is dropped and rebuilt each time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/db-env.sh

demo_db=ctxgraph_demo
sample=samples/stig
rule=harden_sshd_macs_openssh_conf_crypto_policy
out=out/demo
ctxgraph=.venv/bin/ctxgraph
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

banner() { printf '\n################ %s\n\n' "$*"; }

drop_database "$demo_db"
create_database "$demo_db"
export PGDATABASE=$demo_db
DATABASE_URL=$(url_for "$demo_db")
export DATABASE_URL
sqitch deploy --quiet >/dev/null
mkdir -p "$out"

# Without a judge the pass is told so (--no-judge): a pass merely missing its --judge-url leaves
# every row for a later pass that has one, and the demo would show nothing scored.
judge_args=()
if [ -n "${CTXGRAPH_JUDGE_URL:-}" ]; then
  echo "judge leg: $CTXGRAPH_JUDGE_URL"
else
  judge_args=(--no-judge)
  echo "judge leg: CTXGRAPH_JUDGE_URL is not set, so the judge leg is skipped (--no-judge) and follow"
  echo "weights come from the follow signal (follow_probability; the cosine where a row has none)."
fi

banner "1. run-6: load through the write path, then score (the end-of-run pass)"
"$ctxgraph" load --skill stig --tips "$sample/tips.jsonl" --log "$sample/run-6.jsonl"
"$ctxgraph" score --skill stig --run run-6 --log "$sample/run-6.jsonl" --quiet "${judge_args[@]}"

banner "2. after run-6: what the ranker believes about the cryptography rule"
"$ctxgraph" audit --skill stig --rule "$rule" --only ranking,misleading,harmful_when_followed

banner "3. run-7 (the more obedient Worker): load, then score"
"$ctxgraph" load --skill stig --tips "$sample/tips.jsonl" --log "$sample/run-7.jsonl"
"$ctxgraph" score --skill stig --run run-7 --log "$sample/run-7.jsonl" --quiet "${judge_args[@]}"

banner "4. the audit after run-7"
"$ctxgraph" audit --skill stig --rule "$rule" --top 8 --html "$out/audit.html"

banner "5. the legs against the sample's hand-written gold labels"
"$ctxgraph" evaluate --skill stig --labels "$sample/gold_labels.csv" --tips "$sample/tips.jsonl"

banner "6. the same two runs with a judge that is right: the gold labels served as an LLM judge"
# samples/label_judge.py answers the judge protocol from the hand-written labels: a stand-in for a
# perfect judge, to show what follow-weighted credit does when the judge leg works. It measures no
# real model (step 5 does that for whatever CTXGRAPH_JUDGE_URL points at).
judged_db=ctxgraph_demo_judged
port=$(.venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
judge_log=$out/label_judge.log
.venv/bin/python samples/label_judge.py --port "$port" >"$judge_log" 2>&1 &
judge_pid=$!
trap 'kill "$judge_pid" 2>/dev/null || true' EXIT
drop_database "$judged_db"
create_database "$judged_db"
export PGDATABASE=$judged_db
DATABASE_URL=$(url_for "$judged_db")
sqitch deploy --quiet >/dev/null
judge_up=0
for _ in $(seq 50); do
  .venv/bin/python -c "import httpx,sys; httpx.get('http://127.0.0.1:$port/v1/models').raise_for_status()" \
    2>/dev/null && { judge_up=1; break; }
  sleep 0.2
done
# Without the stand-in judge this step would only repeat the judge-less scores under a misleading title.
if [ "$judge_up" -ne 1 ]; then
  echo "demo: samples/label_judge.py did not start; see $judge_log:" >&2
  tail -n 3 "$judge_log" >&2
  exit 1
fi
for run in run-6 run-7; do
  "$ctxgraph" load --skill stig --tips "$sample/tips.jsonl" --log "$sample/$run.jsonl" >/dev/null
  CTXGRAPH_JUDGE_URL="http://127.0.0.1:$port/v1" "$ctxgraph" score --skill stig --run "$run" \
    --log "$sample/$run.jsonl" --quiet | grep -E 'scored now|judge leg|embedding leg'
  if [ "$run" = run-6 ]; then
    echo
    echo "after run-6, with the judge:"
    "$ctxgraph" audit --skill stig --rule "$rule" --only ranking
  fi
done
echo
echo "after run-7, with the judge:"
"$ctxgraph" audit --skill stig --rule "$rule" --only ranking,misleading,harmful_when_followed,eviction,agreement --top 8 \
  --html "$out/audit-judged.html"
"$ctxgraph" evaluate --skill stig --labels "$sample/gold_labels.csv" --tips "$sample/tips.jsonl"

banner "done"
echo "HTML audit: $out/audit.html (without a judge), $out/audit-judged.html (with the judge)"
echo "Explore: psql -h '$PGHOST' -p '$PGPORT' -U '$PGUSER' -d $demo_db   (or -d $judged_db; SELECT * FROM stig.tip_hit_rates ...)"
