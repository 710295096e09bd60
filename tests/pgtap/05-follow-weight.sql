-- The DEF-27 follow weight and verdict, the Wilson bounds and Cohen's kappa: pure functions, so
-- every expected value below is checkable by hand. The follow functions read their coefficients
-- and threshold from ctxgraph.parameters; the last block changes them and sees new results.
-- Floating results are compared after round(..., 9).
BEGIN;
SELECT plan(62);

-- ---------------------------------------------------------------------------------------------
-- follow_weight truth table at the ADR defaults (judge 1.0 / 0.0, cosine >= 0.6 1.0 else 0.0,
-- neither 0.5; NaN is NULL) (14)
-- ---------------------------------------------------------------------------------------------
SELECT is(ctxgraph.follow_weight(true, NULL), 1.0::double precision, 'follow_weight: judge true, no cosine -> 1.0');
SELECT is(ctxgraph.follow_weight(true, 0.1), 1.0::double precision, 'follow_weight: judge true beats a low cosine -> 1.0');
SELECT is(ctxgraph.follow_weight(false, NULL), 0.0::double precision, 'follow_weight: judge false, no cosine -> 0.0');
SELECT is(ctxgraph.follow_weight(false, 0.95), 0.0::double precision, 'follow_weight: judge false beats a high cosine (0.95) -> 0.0');
SELECT is(ctxgraph.follow_weight(NULL, 0.8), 1.0::double precision, 'follow_weight: no judge, cosine 0.8 >= 0.6 -> 1.0');
SELECT is(ctxgraph.follow_weight(NULL, 0.6), 1.0::double precision, 'follow_weight: no judge, cosine exactly 0.6 -> 1.0 (>=)');
SELECT is(ctxgraph.follow_weight(NULL, 0.59), 0.0::double precision, 'follow_weight: no judge, cosine 0.59 < 0.6 -> 0.0');
SELECT is(ctxgraph.follow_weight(NULL, -0.3), 0.0::double precision, 'follow_weight: no judge, negative cosine -> 0.0');
SELECT is(ctxgraph.follow_weight(NULL, NULL), 0.5::double precision, 'follow_weight: both NULL (pre-DEF-27) -> 0.5');
SELECT is(ctxgraph.follow_weight(NULL, 'NaN'), 0.5::double precision, 'follow_weight: no judge, NaN cosine counts as NULL -> 0.5');
SELECT is(ctxgraph.follow_weight(true, 'NaN'), 1.0::double precision, 'follow_weight: judge true with a NaN cosine -> 1.0');
SELECT is(ctxgraph.follow_weight(false, 'NaN'), 0.0::double precision, 'follow_weight: judge false with a NaN cosine -> 0.0');
SELECT is(ctxgraph.follow_weight(NULL, 1.0), 1.0::double precision, 'follow_weight: no judge, cosine 1.0 -> 1.0');
SELECT is(ctxgraph.follow_weight(NULL, 0.0), 0.0::double precision, 'follow_weight: no judge, cosine 0.0 -> 0.0');

-- ---------------------------------------------------------------------------------------------
-- tip_followed: the same decision as a boolean, NULL when neither leg speaks (10)
-- ---------------------------------------------------------------------------------------------
SELECT is(ctxgraph.tip_followed(true, 0.1), true, 'tip_followed: judge true beats a low cosine');
SELECT is(ctxgraph.tip_followed(false, 0.95), false, 'tip_followed: judge false beats a high cosine');
SELECT is(ctxgraph.tip_followed(false, NULL), false, 'tip_followed: judge false, no cosine');
SELECT is(ctxgraph.tip_followed(NULL, 0.6), true, 'tip_followed: no judge, cosine exactly 0.6 -> followed');
SELECT is(ctxgraph.tip_followed(NULL, 0.59), false, 'tip_followed: no judge, cosine 0.59 -> not followed');
SELECT is(ctxgraph.tip_followed(NULL, NULL), NULL::boolean, 'tip_followed: both NULL -> NULL (unknown)');
SELECT is(ctxgraph.tip_followed(NULL, 'NaN'), NULL::boolean, 'tip_followed: NaN cosine counts as NULL -> NULL');
SELECT is(ctxgraph.tip_followed(true, 'NaN'), true, 'tip_followed: judge true with a NaN cosine -> followed');
SELECT is(ctxgraph.tip_followed(false, 'NaN'), false, 'tip_followed: judge false with a NaN cosine -> not followed');
SELECT is(ctxgraph.tip_followed(true, NULL), true, 'tip_followed: judge true, no cosine');

-- ---------------------------------------------------------------------------------------------
-- Wilson bounds (16). With p = 0 and z = 1 the upper bound is 1 / (n + 1): (z²/2n + z/2n) / (1 + z²/n).
-- With p = 1, z = 1, n = 3 the lower bound is (1 + 1/6 - 1/6) / (4/3) = 0.75.
-- With p = 0.5, z = 2, n = 4 the bounds are (1 -/+ sqrt(0.5)) / 2 = 0.146447 / 0.853553.
-- ---------------------------------------------------------------------------------------------
SELECT is(round(ctxgraph.wilson_upper(0, 3, 1)::numeric, 9), 0.25, 'wilson_upper(0, 3, 1) = 1/4');
SELECT is(round(ctxgraph.wilson_lower(0, 3, 1)::numeric, 9), 0.0, 'wilson_lower(0, 3, 1) = 0');
SELECT is(round(ctxgraph.wilson_lower(1, 3, 1)::numeric, 9), 0.75, 'wilson_lower(1, 3, 1) = 3/4');
SELECT is(round(ctxgraph.wilson_upper(1, 3, 1)::numeric, 9), 1.0, 'wilson_upper(1, 3, 1) = 1');
SELECT is(round(ctxgraph.wilson_upper(0, 1.5, 1)::numeric, 9), 0.4, 'wilson_upper(0, 1.5, 1) = 1/2.5: n may be a fractional (follow-weighted) count');
SELECT is(round(ctxgraph.wilson_lower(0.5, 4, 2)::numeric, 6), 0.146447, 'wilson_lower(0.5, 4, 2) = (1 - sqrt(0.5)) / 2');
SELECT is(round(ctxgraph.wilson_upper(0.5, 4, 2)::numeric, 6), 0.853553, 'wilson_upper(0.5, 4, 2) = (1 + sqrt(0.5)) / 2');
SELECT is(round(ctxgraph.wilson_lower(0.3, 10, 0)::numeric, 9), 0.3, 'wilson_lower with z = 0 is p itself');
SELECT is(ctxgraph.wilson_lower(0.5, 0, 1), NULL::double precision, 'wilson_lower: n = 0 -> NULL');
SELECT is(ctxgraph.wilson_upper(0.5, 0, 1), NULL::double precision, 'wilson_upper: n = 0 -> NULL');
SELECT is(ctxgraph.wilson_upper(0.5, -2, 1), NULL::double precision, 'wilson_upper: negative n -> NULL');
SELECT is(ctxgraph.wilson_lower(NULL, 3, 1), NULL::double precision, 'wilson_lower: p NULL -> NULL');
SELECT is(round(ctxgraph.wilson_upper(-0.2, 3, 1)::numeric, 9), 0.25, 'wilson_upper: p = -0.2 is clipped to 0 (same as wilson_upper(0, 3, 1))');
SELECT is(round(ctxgraph.wilson_lower(1.7, 3, 1)::numeric, 9), 0.75, 'wilson_lower: p = 1.7 is clipped to 1 (same as wilson_lower(1, 3, 1))');
SELECT ok((SELECT bool_and(ctxgraph.wilson_lower(p, n, 1.645) <= p + 1e-12 AND p <= ctxgraph.wilson_upper(p, n, 1.645) + 1e-12)
             FROM generate_series(0, 10) AS i, LATERAL (SELECT i / 10.0::double precision AS p) AS ps,
                  unnest(ARRAY[0.5, 1, 3, 10, 100]::double precision[]) AS n),
          'wilson bounds bracket p for p in 0, 0.1 .. 1 and n in 0.5 .. 100');
SELECT ok(ctxgraph.wilson_upper(0, 30, 1) < ctxgraph.wilson_upper(0, 3, 1),
          'wilson_upper shrinks with more evidence: 1/31 < 1/4');

-- ---------------------------------------------------------------------------------------------
-- Cohen's kappa from a 2x2 confusion table (both yes, first only, second only, both no) (8).
-- kappa = (observed - expected) / (1 - expected), expected = (yes1*yes2 + no1*no2) / n².
-- ---------------------------------------------------------------------------------------------
SELECT is(round(ctxgraph.cohen_kappa(5, 0, 0, 5)::numeric, 9), 1.0, 'kappa: perfect agreement (5, 0, 0, 5) -> 1');
SELECT is(round(ctxgraph.cohen_kappa(1, 1, 1, 1)::numeric, 9), 0.0, 'kappa: chance agreement (1, 1, 1, 1): observed 0.5 = expected 0.5 -> 0');
SELECT is(round(ctxgraph.cohen_kappa(4, 1, 1, 4)::numeric, 9), 0.6, 'kappa (4, 1, 1, 4): observed 0.8, expected 0.5 -> 0.6');
SELECT is(round(ctxgraph.cohen_kappa(2, 3, 1, 4)::numeric, 9), 0.2, 'kappa (2, 3, 1, 4): observed 0.6, expected (5*3 + 5*7)/100 = 0.5 -> 0.2');
SELECT is(round(ctxgraph.cohen_kappa(0, 5, 5, 0)::numeric, 9), -1.0, 'kappa: perfect disagreement (0, 5, 5, 0) -> -1');
SELECT is(ctxgraph.cohen_kappa(0, 0, 0, 0), NULL::double precision, 'kappa: empty table -> NULL');
SELECT is(ctxgraph.cohen_kappa(4, 0, 0, 0), NULL::double precision, 'kappa: both raters always yes (expected = 1) -> NULL');
SELECT is(ctxgraph.cohen_kappa(0, 0, 0, 6), NULL::double precision, 'kappa: both raters always no (expected = 1) -> NULL');

-- ---------------------------------------------------------------------------------------------
-- Coefficients and threshold are read from ctxgraph.parameters (14)
-- ---------------------------------------------------------------------------------------------
UPDATE ctxgraph.parameters SET value = 0.3 WHERE name = 'follow.weight.judge_ignored';
SELECT is(ctxgraph.follow_weight(false, 0.95), 0.3::double precision, 'follow_weight: judge false reads follow.weight.judge_ignored (set to 0.3, the successor ADR''s value)');
SELECT is(ctxgraph.follow_weight(true, NULL), 1.0::double precision, 'follow_weight: judge true unchanged by judge_ignored');

UPDATE ctxgraph.parameters SET value = 0.9 WHERE name = 'follow.weight.judge_followed';
SELECT is(ctxgraph.follow_weight(true, 0.1), 0.9::double precision, 'follow_weight: judge true reads follow.weight.judge_followed (0.9)');

UPDATE ctxgraph.parameters SET value = 0.4 WHERE name = 'follow.weight.unscored';
SELECT is(ctxgraph.follow_weight(NULL, NULL), 0.4::double precision, 'follow_weight: both NULL reads follow.weight.unscored (0.4)');
SELECT is(ctxgraph.follow_weight(NULL, 'NaN'), 0.4::double precision, 'follow_weight: NaN cosine reads follow.weight.unscored too');

UPDATE ctxgraph.parameters SET value = 0.8 WHERE name = 'follow.weight.emb_followed';
UPDATE ctxgraph.parameters SET value = 0.1 WHERE name = 'follow.weight.emb_ignored';
SELECT is(ctxgraph.follow_weight(NULL, 0.6), 0.8::double precision, 'follow_weight: cosine at threshold reads follow.weight.emb_followed (0.8)');
SELECT is(ctxgraph.follow_weight(NULL, 0.2), 0.1::double precision, 'follow_weight: cosine below threshold reads follow.weight.emb_ignored (0.1)');

UPDATE ctxgraph.parameters SET value = 0.7 WHERE name = 'follow.emb_threshold';
SELECT is(ctxgraph.follow_weight(NULL, 0.65), 0.1::double precision, 'follow_weight: threshold raised to 0.7: cosine 0.65 is now below it');
SELECT is(ctxgraph.follow_weight(NULL, 0.7), 0.8::double precision, 'follow_weight: cosine exactly at the new threshold 0.7 counts as followed');
SELECT is(ctxgraph.tip_followed(NULL, 0.65), false, 'tip_followed: threshold 0.7: cosine 0.65 is not followed');
SELECT is(ctxgraph.tip_followed(NULL, 0.7), true, 'tip_followed: threshold 0.7: cosine 0.7 is followed');
SELECT is(ctxgraph.tip_followed(false, 0.95), false, 'tip_followed: the judge still wins over the cosine after the change');

UPDATE ctxgraph.parameters SET value = 0.3 WHERE name = 'follow.emb_threshold';
SELECT is(ctxgraph.follow_weight(NULL, 0.35), 0.8::double precision, 'follow_weight: threshold lowered to 0.3: cosine 0.35 is followed');
SELECT is(ctxgraph.tip_followed(NULL, 0.29), false, 'tip_followed: threshold 0.3: cosine 0.29 is not followed');

SELECT * FROM finish();
ROLLBACK;
