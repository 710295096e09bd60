-- Revert ctxgraph:function_tip_evidence from pg

-- Back to @v0.5.0: tip_evidence aggregates the log on every call. Same signature and result
-- columns, so the function is replaced in place and eviction_candidates keeps selecting from it.
BEGIN;

DELETE FROM ctxgraph.parameters WHERE name = 'eviction.min_misleading_probability';

COMMENT ON COLUMN ctxgraph.eviction_candidates.effect IS 'The tip''s effect when followed (ctxgraph.tip_effects): what eviction acts on.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.effect_upper_bound IS 'Upper bound of the effect at eviction.effect_z; below eviction.max_effect_upper the tip is retired.';

CREATE OR REPLACE FUNCTION ctxgraph.tip_evidence(skill text, as_of timestamptz DEFAULT now())
RETURNS TABLE (
    tip_id              bigint,
    rule_id             text,
    attempts            bigint,
    runs                bigint,
    followed_attempts   double precision,
    followed_outcome    double precision,
    outcome_upper_bound double precision,
    baseline_attempts   double precision,
    rule_baseline       double precision,
    shortfall_lower_bound double precision,
    harm_attempts       double precision,
    harm_share          double precision,
    baseline_harm_share double precision,
    retired             boolean,
    reason              text,
    effect              double precision,
    effect_upper_bound  double precision,
    co_followed_tips    integer,
    effects_as_of       timestamptz
)
LANGUAGE sql STABLE
-- Owner's rights: the ranker and analysts read eviction_candidates without SELECT on the raw log.
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
WITH params AS MATERIALIZED (
    -- ctxgraph.param raises on a missing row: eviction never runs on a silent NULL threshold.
    -- Materialized, so every threshold is read (and checked) once per call.
    SELECT ctxgraph.param('eviction.min_attempts') AS min_attempts,
           ctxgraph.param('eviction.min_runs') AS min_runs,
           ctxgraph.param('eviction.min_followed_attempts') AS min_followed,
           ctxgraph.param('eviction.bound_z') AS z,
           ctxgraph.param('eviction.min_shortfall') AS min_shortfall,
           ctxgraph.param('eviction.min_harm_attempts') AS min_harm,
           ctxgraph.param('eviction.min_harm_excess') AS min_harm_excess,
           ctxgraph.param('eviction.max_effect_upper') AS max_effect_upper,
           ctxgraph.param('eviction.effect_z') AS effect_z
),
all_units AS (
    -- One row per (tip, attempt) with a known outcome up to as_of, from the one per-retrieval
    -- definition of credit, follow weight and harm.
    SELECT s.tip_id,
           s.attempt_key,
           min(s.run_id) AS run_id,
           min(s.rule_id) AS rule_id,
           max(s.retrieved_at) AS retrieved_at,
           avg(s.credit) AS outcome,
           avg(s.follow_weight) AS weight,
           bool_or(s.harmful) AS harmful
      FROM ctxgraph.scored_retrievals AS s
     WHERE s.skill = tip_evidence.skill
       AND s.retrieved_at <= tip_evidence.as_of
     GROUP BY s.tip_id, s.attempt_key
),
rule_attempts AS (
    -- Each attempt at each rule once: the population the baselines come from.
    SELECT u.rule_id, u.attempt_key, avg(u.outcome) AS outcome, bool_or(u.harmful) AS harmful
      FROM all_units AS u
     GROUP BY u.rule_id, u.attempt_key
),
last_restore AS (
    SELECT e.tip_id, max(e.restored_at) AS restored_at
      FROM ctxgraph.tip_evictions AS e
     WHERE e.skill = tip_evidence.skill AND e.restored_at IS NOT NULL AND e.restored_at <= tip_evidence.as_of
     GROUP BY e.tip_id
),
tip_units AS (
    -- A restored tip is judged only on evidence newer than its restore.
    SELECT u.*
      FROM all_units AS u
      LEFT JOIN last_restore AS lr ON lr.tip_id = u.tip_id
     WHERE lr.restored_at IS NULL OR u.retrieved_at > lr.restored_at
),
tip_rules AS (
    SELECT u.tip_id, u.rule_id,
           sum(u.weight) AS followed_n,
           sum(u.weight * u.outcome) AS followed_sum
      FROM tip_units AS u
     GROUP BY u.tip_id, u.rule_id
),
tip_rule_baselines AS (
    -- The rule's attempts where this tip was not followed: weight 1 - follow weight, and 1 for
    -- attempts that did not retrieve the tip at all.
    SELECT tr.tip_id, tr.rule_id, tr.followed_n,
           sum(1 - coalesce(u.weight, 0)) AS baseline_n,
           sum((1 - coalesce(u.weight, 0)) * ra.outcome) AS baseline_sum,
           sum((1 - coalesce(u.weight, 0)) * ra.harmful::int) AS baseline_harm
      FROM tip_rules AS tr
      JOIN rule_attempts AS ra ON ra.rule_id = tr.rule_id
      LEFT JOIN tip_units AS u ON u.tip_id = tr.tip_id AND u.attempt_key = ra.attempt_key
     GROUP BY tr.tip_id, tr.rule_id, tr.followed_n
),
per_tip AS (
    SELECT u.tip_id,
           count(*) AS attempts,
           count(DISTINCT u.run_id) AS runs,
           sum(u.weight) AS followed_n,
           sum(u.weight * u.outcome) / nullif(sum(u.weight), 0) AS followed_outcome,
           sum(u.weight * u.harmful::int) AS harm_n
      FROM tip_units AS u
     GROUP BY u.tip_id
),
per_tip_baseline AS (
    -- Difficulty-matched: each rule's baseline weighs as much as the tip was followed there.
    SELECT b.tip_id,
           sum(b.baseline_n) AS baseline_n,
           sum(b.followed_n * b.baseline_sum / b.baseline_n) FILTER (WHERE b.baseline_n > 0)
               / nullif(sum(b.followed_n) FILTER (WHERE b.baseline_n > 0), 0) AS baseline,
           sum(b.followed_n * b.baseline_harm / b.baseline_n) FILTER (WHERE b.baseline_n > 0)
               / nullif(sum(b.followed_n) FILTER (WHERE b.baseline_n > 0), 0) AS baseline_harm_share
      FROM tip_rule_baselines AS b
     GROUP BY b.tip_id
),
judged AS (
    SELECT t.id AS tip_id, t.rule_id, t.retired_at IS NOT NULL AS retired,
           coalesce(pt.attempts, 0) AS attempts,
           coalesce(pt.runs, 0) AS runs,
           coalesce(pt.followed_n, 0) AS followed_n,
           pt.followed_outcome,
           ctxgraph.wilson_upper(pt.followed_outcome, pt.followed_n, params.z) AS upper_bound,
           coalesce(pb.baseline_n, 0) AS baseline_n,
           pb.baseline,
           coalesce(pt.harm_n, 0) AS harm_n,
           pt.harm_n / nullif(pt.followed_n, 0) AS harm_share,
           pb.baseline_harm_share,
           fx.effect, fx.effect + params.effect_z * fx.std_error AS effect_upper_bound, fx.co_followed_tips,
           fx.as_of AS effects_as_of,
           params.*
      FROM ctxgraph.tips AS t
      CROSS JOIN params
      LEFT JOIN per_tip AS pt ON pt.tip_id = t.id
      LEFT JOIN per_tip_baseline AS pb ON pb.tip_id = t.id
      LEFT JOIN ctxgraph.tip_effects AS fx ON fx.skill = t.skill AND fx.tip_id = t.id
     WHERE t.skill = tip_evidence.skill
       AND t.created_at <= tip_evidence.as_of
),
verdicts AS (
    SELECT j.*,
           j.baseline - j.upper_bound AS shortfall,
           -- The support minimums count the tip's own attempts (since its restore, if restored).
           j.attempts >= j.min_attempts AND j.runs >= j.min_runs AND j.followed_n >= j.min_followed AS supported,
           -- Breaking the system needs less support: eviction.min_harm_attempts followed attempts
           -- that broke it, over eviction.min_runs runs.
           j.harm_n >= j.min_harm AND j.runs >= j.min_runs AS harm_supported,
           j.effect_upper_bound < j.max_effect_upper AS harmful_when_followed
      FROM judged AS j
)
SELECT v.tip_id, v.rule_id, v.attempts, v.runs, v.followed_n, v.followed_outcome, v.upper_bound,
       v.baseline_n, v.baseline, v.shortfall, v.harm_n, v.harm_share, v.baseline_harm_share, v.retired,
       CASE
           -- Retire on the tip's own effect, other tips followed with it and the rule's difficulty
           -- explained away; never on outcomes it merely shared with its neighbours.
           WHEN v.harm_supported AND v.harmful_when_followed THEN
               format('harm: effect %s (upper bound %s), followed in %s attempts that broke the system%s',
                      round(v.effect::numeric, 2), round(v.effect_upper_bound::numeric, 2), round(v.harm_n::numeric, 1),
                      CASE WHEN v.co_followed_tips > 1
                           THEN format(', always followed together with %s other tips', v.co_followed_tips - 1) ELSE '' END)
           WHEN v.supported AND v.harmful_when_followed THEN
               format('harmful when followed: effect %s (upper bound %s) over %s attempts, followed in %s%s',
                      round(v.effect::numeric, 2), round(v.effect_upper_bound::numeric, 2), v.attempts,
                      round(v.followed_n::numeric, 1),
                      CASE WHEN v.co_followed_tips > 1
                           THEN format(', always followed together with %s other tips', v.co_followed_tips - 1) ELSE '' END)
       END,
       v.effect, v.effect_upper_bound, v.co_followed_tips, v.effects_as_of
  FROM verdicts AS v
 ORDER BY v.tip_id
$$;

COMMENT ON FUNCTION ctxgraph.tip_evidence(text, timestamptz) IS
    'Per tip of a skill, as of an instant: support (attempts, runs, follow-weighted attempts), the follow-weighted outcome against its rules'' baseline, harm, the effect when followed from ctxgraph.tip_effects, and the eviction reason: supported and the effect''s upper bound below eviction.max_effect_upper (NULL otherwise).';

DROP FUNCTION ctxgraph._tip_evidence_arguments(text, timestamptz);

COMMIT;
