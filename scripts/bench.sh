#!/usr/bin/env bash
# make bench: measured on one run, reported as medians and ratios (nothing passes or fails on a time).
#   1. The ranker's read against from-scratch aggregation, and the write path's cost, on a throwaway
#      database holding a generated 1,000,000-row retrieval log (bench/generate.sql, bench/measure.py;
#      docs/ranker-plan.md explains the figures); then, on the same history, the ingest of one run log
#      of 50,000 retrievals: plain COPY of the same rows (unindexed, and with the log's indexes),
#      `ctxgraph load` in bulk, the per-call path on 500 attempts, and the per-attempt write path on
#      this log against an empty one (bench/measure.py, measure_ingest; every write rolled back).
#   2. The scoring pass over 3,500 retrievals, each leg alone (bench/scoring_pass.py), on a second
#      throwaway database.
#   3. A grid of simulated worlds (bench/simulate_grid.py, docs/simulator.md): how well the utility
#      columns, eviction and the detector views recover a known truth; one line per world, plus the
#      default world on the release before the blame model (@v0.5.0). About 2 minutes.
#   4. The follow signal against every labelled pair set (bench/follow_signal_auc.py): ROC AUC of the
#      cosine and of the calibrated lexical signal, cross-validated by rule, and the judge cascade's
#      calls saved and agreement, and `ctxgraph calibrate` on part of each set from scratch and from the
#      default (about 1 minute, no database); then the cascade on the demo's runs
#      with the label judge, four ways (bench/cascade_demo.sh, about 2 minutes).
#   5. The load run (bench/load_run.py): 16 clients reading the ranker view while 4 agents write
#      attempts and ctxgraph score loops over their run against a local judge, 60 s, on a third
#      throwaway database holding a generated history (BENCH_LOAD_RUN_RUNS runs of the same rules):
#      the read's p50/p99 under load beside its idle p50, errors, deadlocks, rows left unscored,
#      questions asked twice, and the aggregates against a from-scratch computation. About 3 to 4
#      minutes, the effects refit that ends each scoring pass a large part of it.
#   6. `ctxgraph load --per-call` on a fresh database (bench/per_call_growth.py): 3,000 attempts of 5
#      tips out of 2,000 replayed through the per-call loader, in one transaction and as files of
#      250 attempts (each a transaction), each on a database deployed for it; the median cost of an
#      attempt at 250, 1,000 and 3,000 attempts, in ms and in shared buffers, and their ratios to
#      the first (near 1: the cost does not grow with what the load already wrote).
#   7. The attribution fit (bench/fit_engine.py): ctxgraph.fit in full on the same 1M-row log, its
#      read / fit / write split and peak memory, a second call when nothing changed, and the released
#      PL/pgSQL fit (@v0.6.0) on the same log in a database of its own, with how far the two fits'
#      numbers are apart; then the incremental refit after new runs of every rule and of 25 rules,
#      each beside a full fit of the same evidence; each goal beside its measure. About 6 minutes (two logs generated, the
#      released fit about 100 s).
# Every database is dropped on every exit. About 14 minutes on 2 cores (815, 852 and 879 s in three
# runs), under 4 of them part 1
# (docs/benchmarks.md, "The default make bench").
#
# Knobs (environment):
#   BENCH_LOAD=replica|triggers  load the log with session_replication_role = replica (no triggers, no
#                                FK checks; needs a superuser) and one refresh_tip_stats('stig')
#                                afterwards (default), or with the tip_stats triggers firing. Through
#                                the triggers a 250,000-row statement took 35 s in one run and was still
#                                running after 10 minutes in the next (docs/benchmarks.md, "Plans made
#                                before the statistics"): not the default until that is understood.
#   BENCH_RUNS (160), BENCH_RULES (500), BENCH_TIPS_PER_RULE (20), BENCH_SEED (0.4242)
#   BENCH_SCORING_PASS=0         skip part 2
#   BENCH_SIMULATE=0             skip part 3; BENCH_SIMULATE_SEED (1) its seed, BENCH_SIMULATE_BASELINE
#                                (@v0.5.0; empty: no baseline line) the change the "before" line deploys to
#   BENCH_FOLLOW_SIGNAL=0        skip part 4 (the follow signal's AUCs and the demo's judge cascade)
#   BENCH_LOAD_RUN=0             skip part 5; BENCH_LOAD_RUN_SECONDS (60), BENCH_LOAD_RUN_RUNS (4) its history
#   BENCH_PER_CALL_GROWTH=0      skip part 6
#   BENCH_FIT=0                  skip part 7; BENCH_FIT_RUNS (BENCH_RUNS) its log's runs (1600: ~10M rows);
#                                BENCH_FIT_RELEASED=0 leaves out the released fit beside it
#   BENCH_OUT=DIR                keep results.json, the plans and scoring_pass.txt in DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/db-env.sh

load_mode=${BENCH_LOAD:-replica}
case "$load_mode" in
  triggers) replica=off ;;
  replica) replica=on ;;
  *) echo "bench: BENCH_LOAD must be triggers or replica, not $load_mode" >&2; exit 2 ;;
esac
runs=${BENCH_RUNS:-160}
rules=${BENCH_RULES:-500}
tips_per_rule=${BENCH_TIPS_PER_RULE:-20}
seed=${BENCH_SEED:-0.4242}
scoring_pass=${BENCH_SCORING_PASS:-1}
simulate=${BENCH_SIMULATE:-1}
simulate_seed=${BENCH_SIMULATE_SEED:-1}
simulate_baseline=${BENCH_SIMULATE_BASELINE-@v0.5.0}

suffix="$$_$(date +%s)"
bench_db="ctxgraph_bench_$suffix"
pass_db="ctxgraph_bench_pass_$suffix"
load_db="ctxgraph_bench_load_$suffix"
growth_db="ctxgraph_bench_growth_$suffix"
fit_db="ctxgraph_bench_fit_$suffix"
fit_old_db="ctxgraph_bench_fit_old_$suffix"
out=${BENCH_OUT:-}
own_out=0
if [ -z "$out" ]; then out=$(mktemp -d); own_out=1; fi
mkdir -p "$out"
cleanup() {
  drop_database "$bench_db"
  drop_database "$fit_db"
  drop_database "$fit_old_db"
  drop_database "$pass_db"
  drop_database "$load_db"
  drop_database "$growth_db"
  if [ "$own_out" -eq 1 ]; then rm -rf "$out"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

started=$(date +%s)
say() { printf 'bench: %s (%ss)\n' "$*" "$(( $(date +%s) - started ))" >&2; }

# Part 1: the 1M-row log.
say "database $bench_db"
create_database "$bench_db"
( export PGDATABASE="$bench_db"
  sqitch deploy --quiet >/dev/null
  say "deployed; generating the log (load mode: $load_mode)"
  psql -X -q -v ON_ERROR_STOP=1 -v seed="$seed" -v runs="$runs" -v rules="$rules" \
    -v tips_per_rule="$tips_per_rule" -v replica="$replica" -f bench/generate.sql >/dev/null
  say "log loaded"
  .venv/bin/python bench/measure.py --json "$out/results.json" --plan "$out/plan.txt" )
drop_database "$bench_db"
say "measured; $bench_db dropped"

# Part 2: the scoring pass (embedding model and a local judge stub; no network).
pass_status=0
if [ "$scoring_pass" != "0" ]; then
  create_database "$pass_db"
  ( export PGDATABASE="$pass_db"
    sqitch deploy --quiet >/dev/null
    DATABASE_URL=$(url_for "$pass_db") .venv/bin/python bench/scoring_pass.py ) >"$out/scoring_pass.txt" 2>&1 \
    || pass_status=$?
  drop_database "$pass_db"
  say "scoring pass measured; $pass_db dropped"
fi

# Part 3: the simulated worlds (each on its own throwaway database, dropped by the script itself).
simulate_status=0
if [ "$simulate" != "0" ]; then
  .venv/bin/python bench/simulate_grid.py --seed "$simulate_seed" \
    ${simulate_baseline:+--baseline "$simulate_baseline"} --json "$out/simulate_grid.json" \
    >"$out/simulate_grid.txt" || simulate_status=$?
  say "simulated worlds measured"
fi

# Part 4: the follow signal on the labelled pairs (no database), then the judge cascade on the demo's runs.
follow_signal_status=0
if [ "${BENCH_FOLLOW_SIGNAL:-1}" != "0" ]; then
  HF_HUB_OFFLINE=1 .venv/bin/python bench/follow_signal_auc.py >"$out/follow_signal.txt" 2>&1 || follow_signal_status=$?
  # The judge cascade on the demo's runs with the demo's label judge (two fresh databases).
  { echo; bash bench/cascade_demo.sh; } >>"$out/follow_signal.txt" 2>&1 || follow_signal_status=$?
  say "follow signal measured"
fi

# Part 5: the load run (readers, agents and scoring passes at once) on a history of its own.
load_run_status=0
if [ "${BENCH_LOAD_RUN:-1}" != "0" ]; then
  create_database "$load_db"
  ( export PGDATABASE="$load_db"
    sqitch deploy --quiet >/dev/null
    psql -X -q -v ON_ERROR_STOP=1 -v seed="$seed" -v runs="${BENCH_LOAD_RUN_RUNS:-4}" -v rules="$rules" \
      -v tips_per_rule="$tips_per_rule" -v replica="$replica" -f bench/generate.sql >/dev/null
    DATABASE_URL=$(url_for "$load_db") .venv/bin/python bench/load_run.py \
      --seconds "${BENCH_LOAD_RUN_SECONDS:-60}" --json "$out/load_run.json" ) >"$out/load_run.txt" 2>&1 \
    || load_run_status=$?
  drop_database "$load_db"
  say "load run measured; $load_db dropped"
fi

# Part 6: the per-call load on a fresh database, in one transaction and as files of 250 attempts.
growth_status=0
if [ "${BENCH_PER_CALL_GROWTH:-1}" != "0" ]; then
  : >"$out/per_call_growth.txt"
  for every in 0 250; do
    create_database "$growth_db"
    ( export PGDATABASE="$growth_db"
      sqitch deploy --quiet >/dev/null
      .venv/bin/python bench/per_call_growth.py --commit-every "$every" --json "$out/per_call_growth_$every.json" ) \
      >>"$out/per_call_growth.txt" 2>&1 || growth_status=$?
    drop_database "$growth_db"
  done
  say "per-call load measured; $growth_db dropped"
fi

# Part 7: the attribution fit, and the released one beside it, on a log of its own.
fit_status=0
if [ "${BENCH_FIT:-1}" != "0" ]; then
  fit_runs=${BENCH_FIT_RUNS:-$runs}
  released=()
  create_database "$fit_db"
  ( export PGDATABASE="$fit_db"
    sqitch deploy --quiet >/dev/null
    psql -X -q -v ON_ERROR_STOP=1 -v seed="$seed" -v runs="$fit_runs" -v rules="$rules" \
      -v tips_per_rule="$tips_per_rule" -v replica="$replica" -f bench/generate.sql >/dev/null ) || fit_status=$?
  if [ "${BENCH_FIT_RELEASED:-1}" != "0" ] && [ "$fit_status" -eq 0 ]; then
    create_database "$fit_old_db"
    ( export PGDATABASE="$fit_old_db"
      sqitch deploy --quiet --to @v0.6.0 >/dev/null
      psql -X -q -v ON_ERROR_STOP=1 -v seed="$seed" -v runs="$fit_runs" -v rules="$rules" \
        -v tips_per_rule="$tips_per_rule" -v replica="$replica" -f bench/generate.sql >/dev/null ) || fit_status=$?
    released=(--released-db "$(url_for "$fit_old_db")")
  fi
  if [ "$fit_status" -eq 0 ]; then
    .venv/bin/python bench/fit_engine.py --db "$(url_for "$fit_db")" "${released[@]}" --json "$out/fit_engine.json" \
      >"$out/fit_engine.txt" 2>&1 || fit_status=$?
  fi
  drop_database "$fit_db"
  drop_database "$fit_old_db"
  say "attribution fit measured; $fit_db and $fit_old_db dropped"
fi

printf '\n== EXPLAIN (ANALYZE, BUFFERS) of the ranker read (50 candidate tips)\n\n'
cat "$out/plan.txt"
if [ "$scoring_pass" != "0" ]; then
  printf '\n== scoring pass (bench/scoring_pass.py)\n\n'
  cat "$out/scoring_pass.txt"
  if [ "$pass_status" -ne 0 ]; then printf 'bench: the scoring-pass benchmark failed (exit %s)\n' "$pass_status"; fi
fi
printf '\n'
.venv/bin/python bench/report.py --load-mode "$load_mode" --elapsed "$(( $(date +%s) - started ))" "$out/results.json"
if [ "$simulate" != "0" ]; then
  printf '\n'
  cat "$out/simulate_grid.txt"
  if [ "$simulate_status" -ne 0 ]; then printf 'bench: the simulated worlds failed (exit %s)\n' "$simulate_status"; fi
fi
if [ "${BENCH_FOLLOW_SIGNAL:-1}" != "0" ]; then
  printf '\n== follow signal (bench/follow_signal_auc.py)\n\n'
  cat "$out/follow_signal.txt"
  if [ "$follow_signal_status" -ne 0 ]; then printf 'bench: the follow-signal benchmark failed (exit %s)\n' "$follow_signal_status"; fi
fi
if [ "${BENCH_LOAD_RUN:-1}" != "0" ]; then
  printf '\n== load run (bench/load_run.py)\n\n'
  cat "$out/load_run.txt"
  if [ "$load_run_status" -ne 0 ]; then printf 'bench: the load run failed or found a fault (exit %s)\n' "$load_run_status"; fi
fi
if [ "${BENCH_PER_CALL_GROWTH:-1}" != "0" ]; then
  printf '\n== ctxgraph load --per-call on a fresh database (bench/per_call_growth.py)\n\n'
  cat "$out/per_call_growth.txt"
  if [ "$growth_status" -ne 0 ]; then printf 'bench: the per-call load failed (exit %s)\n' "$growth_status"; fi
fi
if [ "${BENCH_FIT:-1}" != "0" ]; then
  printf '\n== the attribution fit (bench/fit_engine.py)\n\n'
  cat "$out/fit_engine.txt" 2>/dev/null
  if [ "$fit_status" -ne 0 ]; then printf 'bench: the attribution-fit benchmark failed (exit %s)\n' "$fit_status"; fi
fi
if [ "$own_out" -eq 0 ]; then printf '\nresults kept in %s\n' "$out"; fi
if [ "$pass_status" -ne 0 ]; then exit "$pass_status"; fi
if [ "$follow_signal_status" -ne 0 ]; then exit "$follow_signal_status"; fi
if [ "$load_run_status" -ne 0 ]; then exit "$load_run_status"; fi
if [ "$growth_status" -ne 0 ]; then exit "$growth_status"; fi
if [ "$fit_status" -ne 0 ]; then exit "$fit_status"; fi
exit "$simulate_status"
