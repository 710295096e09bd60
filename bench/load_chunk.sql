-- bench/load_chunk.sql: one INSERT ... SELECT of the log, runs (chunk-1)*runs_per_chunk+1 to
-- chunk*runs_per_chunk. Included by bench/generate.sql, which sets chunk, runs_per_chunk,
-- last_unscored_run and runs; every random() is drawn while scanning gen_attempts in id order.
SELECT clock_timestamp() AS t0 \gset
INSERT INTO stig.tip_retrievals
       (run_id, attempt_id, tip_id, rule_id, rank, similarity_score, outcome_value, outcome_confidence,
        retrieved_at, tip_followed_llm, tip_followed_emb, tip_followed_computed_at)
SELECT a.run_id,
       CASE WHEN NOT a.unlinked THEN a.id END,
       CASE WHEN k.rank = 5 AND a.other_rule IS NOT NULL
            THEN (a.other_rule - 1) * :tips_per_rule + 1 + (a.tip_base + 13) % :tips_per_rule
            ELSE (a.rule_no - 1) * :tips_per_rule + 1 + (a.tip_base + (k.rank - 1) * 7) % :tips_per_rule END,
       a.rule_id,
       k.rank,
       round((0.92 - 0.06 * k.rank - 0.05 * random())::numeric, 4)::double precision,
       CASE WHEN NOT a.unlinked THEN a.outcome END,
       CASE WHEN NOT a.unlinked AND a.outcome IS NOT NULL THEN 1.0 END,
       a.started_at - interval '1 second',
       CASE WHEN v.scored AND v.judge_answers THEN v.followed <> v.judge_wrong END,
       CASE WHEN v.scored AND v.cos_present
            THEN round((CASE WHEN v.followed THEN 0.35 + 0.45 * v.u_cos ELSE 0.05 + 0.55 * v.u_cos END)::numeric, 4)::double precision
       END,
       CASE WHEN v.scored THEN a.started_at + interval '1 day' END
  FROM gen_attempts AS a
 CROSS JOIN generate_series(1, 5) AS k (rank)
 CROSS JOIN LATERAL (
       SELECT a.run_no > :last_unscored_run AND a.run_no < :runs AS scored,
              random() < 0.55 - 0.07 * (k.rank - 1) AS followed,
              random() < 0.80 AS judge_answers,
              random() < 0.10 AS judge_wrong,
              random() < 0.97 AS cos_present,
              random() AS u_cos) AS v
 WHERE a.run_no BETWEEN (:chunk - 1) * :runs_per_chunk + 1 AND :chunk * :runs_per_chunk
 ORDER BY a.id, k.rank;
INSERT INTO public.bench_load (step, rows, seconds)
SELECT format('log chunk %s', :chunk), :ROW_COUNT, extract(epoch FROM clock_timestamp() - :'t0'::timestamptz);
