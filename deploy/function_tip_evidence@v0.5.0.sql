-- Deploy ctxgraph:function_tip_evidence to pg
-- requires: function_tip_evidence@v0.4.0
-- requires: table_tip_effects

-- Rework: eviction acts on each tip's effect when followed (ctxgraph.tip_effects), which explains
-- away the tips followed with it and the rule's difficulty. Released, a tip was retired when its
-- followed outcome fell short of its rules' baseline, or when it was followed in attempts that
-- broke the system: both blamed every tip followed beside a misleading one (on a simulated skill,
-- 9 to 20 helpful tips retired). Now both reasons need the effect's upper bound, at
-- eviction.effect_z standard errors, below eviction.max_effect_upper: 'harm' with eviction.min_harm_attempts followed attempts that broke
-- the system over eviction.min_runs runs, 'harmful when followed' with the full support
-- (eviction.min_attempts, eviction.min_runs, eviction.min_followed_attempts; counted since a
-- restore). The baseline, shortfall and harm-share columns stay as evidence.
-- The result gains the effect columns, so the function is recreated, and with it
-- eviction_candidates, the view that selects from it (a view cannot outlive a change of its
-- function's result type); the view now shows the effect too.
BEGIN;

INSERT INTO ctxgraph.parameters (name, value, description) VALUES
    ('eviction.max_effect_upper', 0.0, 'Eviction: the upper bound of the effect at eviction.effect_z must lie below this (harmful when followed).'),
    ('eviction.effect_z',         1.0, 'Eviction: normal quantile of the effect''s upper bound that eviction compares (one-sided 84%; the support minimums and the shrinkage of the effects add their own caution).');

DO $$ BEGIN PERFORM ctxgraph.unexpose_skill_view('eviction_candidates'); END $$;
DROP VIEW ctxgraph.eviction_candidates;
DROP FUNCTION ctxgraph.tip_evidence(text, timestamptz);

CREATE FUNCTION ctxgraph.tip_evidence(skill text, as_of timestamptz DEFAULT now())
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

REVOKE ALL ON FUNCTION ctxgraph.tip_evidence(text, timestamptz) FROM PUBLIC;
DO $$ BEGIN PERFORM ctxgraph._grant('EXECUTE ON FUNCTION ctxgraph.tip_evidence(text, timestamptz)', '{writer,ranker,analyst}'); END $$;

CREATE VIEW ctxgraph.eviction_candidates AS
SELECT s.name AS skill,
       e.tip_id,
       e.rule_id,
       t.body,
       e.reason,
       e.attempts,
       e.runs,
       e.followed_attempts,
       e.followed_outcome,
       e.outcome_upper_bound,
       e.rule_baseline,
       e.shortfall_lower_bound,
       e.harm_attempts,
       e.harm_share,
       e.baseline_harm_share,
       e.effect,
       e.effect_upper_bound,
       e.co_followed_tips
  FROM ctxgraph.skills AS s
 CROSS JOIN LATERAL ctxgraph.tip_evidence(s.name, now()) AS e
  JOIN ctxgraph.tips AS t ON t.skill = s.name AND t.id = e.tip_id
 WHERE e.reason IS NOT NULL
   AND NOT e.retired;

COMMENT ON VIEW ctxgraph.eviction_candidates IS
    'Active tips whose evidence (ctxgraph.tip_evidence at now(), on the effects last fitted) justifies retiring them: what ctxgraph.evict_tips would retire.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.skill IS 'The skill.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.tip_id IS 'The tip.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.rule_id IS 'The rule the tip was learned on.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.body IS 'The tip text.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.reason IS 'Why it would be retired.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.attempts IS 'Distinct scored attempts (the unit of evidence).';
COMMENT ON COLUMN ctxgraph.eviction_candidates.runs IS 'Distinct runs of those attempts.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.followed_attempts IS 'Follow-weighted attempts: the sum of follow weights.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.followed_outcome IS 'Follow-weighted mean outcome of the tip''s attempts.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.outcome_upper_bound IS 'Wilson upper bound of followed_outcome (z = eviction.bound_z).';
COMMENT ON COLUMN ctxgraph.eviction_candidates.rule_baseline IS 'Mean outcome of the same rules'' attempts that did not follow the tip.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.shortfall_lower_bound IS 'rule_baseline - outcome_upper_bound: how much worse following the tip does, at least.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.harm_attempts IS 'Follow-weighted attempts that broke the system.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.harm_share IS 'harm_attempts / followed_attempts.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.baseline_harm_share IS 'Share of the rules'' other attempts that broke the system.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.effect IS 'The tip''s effect when followed (ctxgraph.tip_effects): what eviction acts on.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.effect_upper_bound IS 'Upper bound of the effect at eviction.effect_z; below eviction.max_effect_upper the tip is retired.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.co_followed_tips IS 'Tips always followed together with it (itself included), which share its effect.';

DO $$ BEGIN PERFORM ctxgraph._grant('SELECT ON ctxgraph.eviction_candidates', '{ranker,analyst}'); END $$;

DO $$ BEGIN PERFORM ctxgraph.expose_skill_view('eviction_candidates'); END $$;

COMMIT;
