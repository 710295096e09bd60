-- Deploy ctxgraph:table_tip_effects to pg
-- requires: table_tip_effects@v0.5.0

-- Rework: a group of tips linked by shared rules used to be solved exactly or, above
-- effects.max_component_tips columns, not at all. Real logs link nearly everything (a tip retrieved
-- once for another rule joins two groups): on the bench's log 5,986 of 6,000 tips were left
-- 'not_fitted', so eviction had no effect to act on. Now such a group is fitted blockwise: the
-- same penalised likelihood, maximised one rule's block at a time until it settles
-- (effects.max_sweeps), method 'blockwise'. Its effects equal the exact solve's; its std errors
-- are each block's own (see the function). The design is also built with joins instead of array
-- searches, which cost the square of the group's size.
--
-- The effects explain co-followed neighbours away only as far as a linear (logistic) model can:
-- when a misleading tip sinks every attempt that follows it, its neighbours' effects are pulled
-- down with it, and with a few attempts per tip every std error stays near the ridge prior's. So
-- the fit now also answers the question eviction asks, "does following this tip fail the
-- attempt?", with a latent-class model (_fit_tip_blame below): tip_effects.misleading_probability.
BEGIN;

-- ---------------------------------------------------------------------------------------------
-- _refuse_foreign_temp_objects: the guard of every owner-run function that makes or reuses a
-- temporary table (the fit below is the first of them in the plan; the bulk ingest's staging
-- table and the scoring pass's write-back are the others). A temporary table is looked up by
-- name in the caller's own session, so a caller could make one of that name first, with a
-- trigger, a rule, a column default, a check or an index expression that calls a function of its
-- own: a TRUNCATE, INSERT or UPDATE of it by a SECURITY DEFINER function runs that code with the
-- owner's rights (a writer made itself superuser that way). Such a function calls this first,
-- with every temporary name it uses: any relation or type of those names in this session's
-- temporary schema that belongs to another role than the one running (the owner, inside owner-run
-- code) is refused, 42501, before anything has run. Tables the owner made earlier in the session
-- are its own and pass. Not SECURITY DEFINER itself: current_user is whoever runs the caller.
-- ---------------------------------------------------------------------------------------------
CREATE FUNCTION ctxgraph._refuse_foreign_temp_objects(VARIADIC names text[])
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
DECLARE
    taken record;
BEGIN
    SELECT o.name, o.owner INTO taken
      FROM (SELECT c.relname::text AS name, c.relowner AS owner, 1 AS kind
              FROM pg_catalog.pg_class AS c
             WHERE c.relnamespace = pg_catalog.pg_my_temp_schema() AND c.relname = ANY (names)
            UNION ALL
            SELECT t.typname::text, t.typowner, 2
              FROM pg_catalog.pg_type AS t
             WHERE t.typnamespace = pg_catalog.pg_my_temp_schema() AND t.typname = ANY (names)) AS o
     WHERE pg_catalog.pg_get_userbyid(o.owner) <> current_user
     ORDER BY pg_catalog.array_position(names, o.name), o.kind
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ctxgraph: pg_temp.% belongs to role %, not to %: drop it, then call again', taken.name,
                        pg_catalog.pg_get_userbyid(taken.owner), current_user
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'ctxgraph makes its own temporary tables and never uses one another role made.';
    END IF;
END
$$;

COMMENT ON FUNCTION ctxgraph._refuse_foreign_temp_objects(text[]) IS
    'Private: raises 42501 when a relation or type of one of these names in this session''s temporary schema belongs to another role than current_user; called first by every owner-run function that makes or reuses a temporary table, so it never runs a caller''s trigger, rule, default or index expression with the owner''s rights.';
REVOKE ALL ON FUNCTION ctxgraph._refuse_foreign_temp_objects(text[]) FROM PUBLIC;
-- The writer and the scorer call the functions that use it; ingest_run_log runs with the
-- writer's own rights until privileges_write_path makes it owner-run, and after its revert.
DO $$ BEGIN PERFORM ctxgraph._grant('EXECUTE ON FUNCTION ctxgraph._refuse_foreign_temp_objects(text[])', '{writer,scorer}'); END $$;

INSERT INTO ctxgraph.parameters (name, value, description) VALUES
    ('effects.max_sweeps', 200, 'Tip effects: most sweeps over the blocks of a group fitted blockwise (the fit stops earlier when no effect moves by 1e-6).'),
    ('blame.judge_reliability', 0.9, 'Blame: chance that a judge verdict is right (the chance the script followed a tip the judge says it followed, and ignored one it says it ignored).'),
    ('blame.embedding_reliability', 0.7, 'Blame: the same for a verdict of the cosine against follow.emb_threshold (the follow probability, when there is one, is used as it is).'),
    ('blame.misleading_failure', 1.0, 'Blame: chance that following a misleading tip fails the attempt.'),
    ('blame.unexplained_harm', 0.001, 'Blame: chance that a failure with no misleading tip followed breaks the system (DEF-26 reads a health failure as a tip breaking it, so rare).'),
    ('blame.prior_misleading', 0.2, 'Blame: prior share of misleading tips, weighing as much as 10 tips; the fit re-estimates the share from it.'),
    ('blame.misleading_above', 0.5, 'Blame: misleading_probability above which a tip is listed harmful when followed (and, with eviction''s support minimums, retired).'),
    ('blame.max_block_tips', 10, 'Blame: most tips of one rule whose 2^n combinations are weighed together; a rule with more is split into blocks of this many.'),
    ('blame.base_rate_points', 5, 'Blame: grid points over which each rule''s unknown pass rate is integrated out.'),
    ('blame.harm_share_points', 3, 'Blame: grid points over which each rule''s unknown share of misleading-tip failures that break the system is integrated out.'),
    ('blame.cosine_with_judge', 1, 'Blame: 1 to sharpen each judge verdict with the same row''s cosine, as far as the skill''s own cosines tell followed from ignored (fitted per refresh); 0 to use the verdict alone.'),
    ('blame.max_sweeps', 100, 'Blame: most sweeps of the fit (it stops earlier when no probability and no fitted share moves by 1e-4).'),
    ('blame.max_work', 1e7, 'Blame: most likelihood terms one sweep may stand for (subsets x attempts x grid cells; a sweep computes each attempt''s terms once per pattern of its own tips, about 0.7 s at 1e7 on 2 cores); blocks shrink to fit, and a skill too large even for blocks of one tip is fitted with each rule at a point estimate (blame_method mean_field), whose sweep costs two passes over the units of failed attempts.');

ALTER TABLE ctxgraph.tip_effects ADD COLUMN misleading_probability double precision
    CHECK (misleading_probability BETWEEN 0 AND 1);
COMMENT ON COLUMN ctxgraph.tip_effects.misleading_probability IS
    'Posterior probability that following the tip fails the attempt (it is misleading), the other tips followed in the same attempts and the rule''s own pass rate explained away; NULL without evidence. Above blame.misleading_above the tip is harmful when followed.';

ALTER TABLE ctxgraph.tip_effects DROP CONSTRAINT tip_effects_method_check;
ALTER TABLE ctxgraph.tip_effects ADD CONSTRAINT tip_effects_method_check
    CHECK (method IN ('exact', 'blockwise', 'not_fitted', 'no_evidence'));
COMMENT ON COLUMN ctxgraph.tip_effects.method IS
    'exact (its group solved at once), blockwise (a group larger than effects.max_component_tips, solved rule by rule to the same optimum), not_fitted (kept for fits written before blockwise existed), no_evidence.';
COMMENT ON COLUMN ctxgraph.tip_effects.std_error IS
    'Standard error of the effect: from the penalised information matrix of its group (exact) or of its rule''s block with the other blocks held fixed (blockwise, at most the exact one).';
COMMENT ON COLUMN ctxgraph.tip_effects.parameters IS
    'The effects.* parameters the fit used, and the reweighting iterations (exact) or sweeps (blockwise) its group took.';

-- _ridge_step: x = A^-1 b for a symmetric positive definite n x n matrix A (row-major, flat), by
-- Cholesky; _ridge_solve without the inverse's diagonal, which costs as much again and which the
-- blockwise fit needs once, not at every step. Private. Like _ridge_solve it reads the diagonal
-- and the lower triangle only, and refresh_tip_effects fills no more of A than that
-- (21-effects-blockwise holds both functions to it).
CREATE FUNCTION ctxgraph._ridge_step(a double precision[], b double precision[], n integer)
RETURNS double precision[]
LANGUAGE plpgsql IMMUTABLE STRICT
AS $$
DECLARE
    l double precision[] := array_fill(0.0::double precision, ARRAY[n * n]);
    y double precision[] := array_fill(0.0::double precision, ARRAY[n]);
    x double precision[] := array_fill(0.0::double precision, ARRAY[n]);
    s double precision;
    i integer;
    j integer;
    k integer;
BEGIN
    FOR j IN 1 .. n LOOP
        s := a[(j - 1) * n + j];
        FOR k IN 1 .. j - 1 LOOP
            s := s - l[(j - 1) * n + k] ^ 2;
        END LOOP;
        IF s <= 0 THEN
            RAISE EXCEPTION 'ctxgraph: _ridge_step needs a positive definite matrix' USING ERRCODE = 'data_exception';
        END IF;
        l[(j - 1) * n + j] := sqrt(s);
        FOR i IN j + 1 .. n LOOP
            s := a[(i - 1) * n + j];
            FOR k IN 1 .. j - 1 LOOP
                s := s - l[(i - 1) * n + k] * l[(j - 1) * n + k];
            END LOOP;
            l[(i - 1) * n + j] := s / l[(j - 1) * n + j];
        END LOOP;
    END LOOP;
    FOR i IN 1 .. n LOOP
        s := b[i];
        FOR k IN 1 .. i - 1 LOOP
            s := s - l[(i - 1) * n + k] * y[k];
        END LOOP;
        y[i] := s / l[(i - 1) * n + i];
    END LOOP;
    FOR i IN REVERSE n .. 1 LOOP
        s := y[i];
        FOR k IN i + 1 .. n LOOP
            s := s - l[(k - 1) * n + i] * x[k];
        END LOOP;
        x[i] := s / l[(i - 1) * n + i];
    END LOOP;
    RETURN x;
END
$$;

COMMENT ON FUNCTION ctxgraph._ridge_step(double precision[], double precision[], integer) IS
    'Private: solves A x = b for a symmetric positive definite A (row-major flat array, read on and below the diagonal only) by Cholesky.';
REVOKE ALL ON FUNCTION ctxgraph._ridge_step(double precision[], double precision[], integer) FROM PUBLIC;

-- _follow_chance: the chance that the script followed the tip, given a verdict right with
-- reliability r either way, the base rate o at which scripts follow tips, and (when mu1 is given)
-- the cosine under two normals N(mu1, spread) for followed and N(mu0, spread) for ignored. Each
-- normal keeps 2% of its weight for a stray cosine anywhere in [-1, 1] (density 0.5): real cosines
-- have heavier tails than a normal, and one far from both means must not overrule the verdict.
CREATE FUNCTION ctxgraph._follow_chance(followed boolean, r double precision, o double precision,
                                        cosine double precision, mu1 double precision, mu0 double precision,
                                        spread double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
-- One expression and no SET clause, so that the planner inlines it into the fit's scans.
RETURN o * CASE WHEN followed THEN r ELSE 1 - r END
            * CASE WHEN cosine IS NULL OR mu1 IS NULL OR spread IS NULL OR spread <= 0 THEN 1
                  ELSE (0.98 * exp(greatest(-((cosine - mu1) ^ 2) / (2 * spread), -700)) / sqrt(2 * pi() * spread) + 0.01) / (0.98 * exp(greatest(-((cosine - mu0) ^ 2) / (2 * spread), -700)) / sqrt(2 * pi() * spread) + 0.01) END
       / (o * CASE WHEN followed THEN r ELSE 1 - r END
            * CASE WHEN cosine IS NULL OR mu1 IS NULL OR spread IS NULL OR spread <= 0 THEN 1
                  ELSE (0.98 * exp(greatest(-((cosine - mu1) ^ 2) / (2 * spread), -700)) / sqrt(2 * pi() * spread) + 0.01) / (0.98 * exp(greatest(-((cosine - mu0) ^ 2) / (2 * spread), -700)) / sqrt(2 * pi() * spread) + 0.01) END
          + (1 - o) * CASE WHEN followed THEN 1 - r ELSE r END);
COMMENT ON FUNCTION ctxgraph._follow_chance(boolean, double precision, double precision, double precision, double precision, double precision, double precision) IS
    'Private: P(followed | verdict right with r, base rate o, cosine under N(mu1, spread) vs N(mu0, spread)); the cosine is left out when mu1 is NULL.';
REVOKE ALL ON FUNCTION ctxgraph._follow_chance(boolean, double precision, double precision, double precision, double precision, double precision, double precision) FROM PUBLIC;

-- _aitken_step: how much further a quantity whose last two steps were last_step and step goes if
-- its steps keep shrinking by their ratio r (at most 0.95): step r / (1 - r), Aitken's
-- delta-squared; NULL unless the two steps went the same way and shrank. The one rule behind
-- _aitken_share and _aitken_mixture.
CREATE FUNCTION ctxgraph._aitken_step(step double precision, last_step double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN step * last_step > 0 AND abs(step) < abs(last_step)
            THEN step * least(step / last_step, 0.95) / (1 - least(step / last_step, 0.95)) END;
COMMENT ON FUNCTION ctxgraph._aitken_step(double precision, double precision) IS
    'Private: the steps still to come of a quantity whose steps shrink by a steady ratio (Aitken''s delta-squared, ratio at most 0.95); NULL unless the last two steps went the same way and shrank.';
REVOKE ALL ON FUNCTION ctxgraph._aitken_step(double precision, double precision) FROM PUBLIC;

-- _aitken_share: the misleading share pi one step ahead, for the exact blame fit. pi's EM steps
-- shrink by a nearly constant ratio r (0.91 on the bench's 4-run log: the tips follow pi and pi
-- follows the tips), so the fit settled at sweep 74, still 1e-3 from its fixed point. Where the
-- last two steps went the same way and shrank, pi moves on by the steps still to come, step
-- r / (1 - r) (Aitken's delta-squared), with r at most 0.95 and pi inside [0.001, 0.5]; elsewhere
-- it stays. There it settled at sweep 56, as close to the fixed point, no tip on the other side of
-- 0.5. The mean field is left alone: its last sweeps are tips swinging, not pi drifting, and a
-- jump only moves where the swinging stops at blame.max_sweeps.
CREATE FUNCTION ctxgraph._aitken_share(share double precision, step double precision, last_step double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (SELECT CASE WHEN a.ahead IS NULL THEN share ELSE least(greatest(share + a.ahead, 0.001), 0.5) END
          FROM (SELECT ctxgraph._aitken_step(step, last_step) AS ahead) AS a);
COMMENT ON FUNCTION ctxgraph._aitken_share(double precision, double precision, double precision) IS
    'Private: the blame fit''s share of misleading tips moved on by the EM steps still to come (Aitken''s delta-squared), when its last two steps shrank the same way.';
REVOKE ALL ON FUNCTION ctxgraph._aitken_share(double precision, double precision, double precision) FROM PUBLIC;

-- _aitken_mixture: the skill's harm-share mixture one step ahead, for the exact blame fit. The
-- mixture starts even over the grid and its EM steps drift it, a little less each sweep, towards
-- a few points (on the bench's 4-run log from [1/3, 1/3, 1/3] to [0.96, 0.03, 0.007]): that drift,
-- not the tips or pi, kept the fit sweeping. Where every weight's last two steps went the same way
-- and shrank, each moves on by the steps still to come (Aitken's delta-squared, r at most 0.95, as
-- _aitken_share), kept at or above floor, and the weights are scaled back to sum 1; elsewhere the
-- mixture stays. The bench's 4-run log then settles in 24 sweeps instead of 56; with 4,000 more
-- scored rows, in 27 instead of 63, 2.6e-4 from the fixed point of a fit run to 1e-8 (the plain
-- fit: 9.4e-4), no tip on the other side of 0.5.
CREATE FUNCTION ctxgraph._aitken_mixture(mixture double precision[], step double precision[],
                                         last_step double precision[], floor double precision)
RETURNS double precision[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN cardinality(last_step) = cardinality(step) AND cardinality(step) = cardinality(mixture)
                 AND NOT EXISTS (SELECT 1 FROM unnest(step, last_step) AS x (s, l)
                                  WHERE ctxgraph._aitken_step(x.s, x.l) IS NULL)
            THEN (SELECT array_agg(z.w / z.total ORDER BY z.i)
                    FROM (SELECT y.i, y.w, sum(y.w) OVER () AS total
                            FROM (SELECT x.i, greatest(x.m + ctxgraph._aitken_step(x.s, x.l), floor) AS w
                                    FROM unnest(mixture, step, last_step) WITH ORDINALITY AS x (m, s, l, i)) AS y) AS z)
            ELSE mixture END;
COMMENT ON FUNCTION ctxgraph._aitken_mixture(double precision[], double precision[], double precision[], double precision) IS
    'Private: the blame fit''s harm-share mixture moved on by the EM steps still to come (Aitken''s delta-squared per weight, at least floor, scaled to sum 1), when every weight''s last two steps shrank the same way.';
REVOKE ALL ON FUNCTION ctxgraph._aitken_mixture(double precision[], double precision[], double precision[], double precision) FROM PUBLIC;

-- _blame_mean_field: the same model for a skill too large for the exact blocks (blame.max_work).
--
-- The exact fit integrates each rule's pass rate and harm share over their grid, which couples
-- every attempt of a rule to every one of its tips: a block's sweep reads all the rule's attempts.
-- With hundreds of attempts per rule those posteriors are narrow, so here each rule keeps a point
-- estimate instead (its posterior mean under a uniform prior, from EM responsibilities), and a
-- tip's update reads only the attempts that retrieved it: each sweep costs two passes over the
-- units of failed attempts (a pass's term never moves), whatever the number of attempts per rule.
-- Tips are updated one after another, each given the others' current probabilities (the expected
-- factor the exact fit uses for tips outside a block), and every attempt's factor is moved as
-- soon as one of its tips moves: two tips failing together do not both take the blame and both
-- shed it in turn, as they would if all were updated at once. A tip that turns back halves its
-- step, so one on the edge settles there; one that keeps its way lengthens it again, in the first
-- half of the sweeps.
-- Reads pg_temp.blame_units and pg_temp.blame_attempts as _fit_tip_blame leaves them; writes
-- pg_temp.blame_mean_field (tip_id, q).
CREATE FUNCTION ctxgraph._blame_mean_field(failure double precision, eps double precision,
                                           prior_share double precision, max_sweeps integer)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, ctxgraph, pg_temp
SET jit = off
AS $$
DECLARE
    pi          double precision := prior_share;
    tip_ids     bigint[];
    q           double precision[];
    step        double precision[];   -- each tip's step towards its new value (halved when it turns back)
    direction   double precision[];   -- the sign of its last move
    tip_start   integer[];   -- each tip's units in failures are tip_start[t] .. tip_start[t + 1] - 1
    unit_att    integer[];
    unit_fd     double precision[];   -- failure * the chance the script followed the tip
    unit_rule   integer[];            -- the unit's attempt's rule and whether it broke the system,
    unit_health boolean[];            -- read in the sweeps without going through the attempt
    pass_delta  double precision[];   -- each tip's sum of ln(1 - failure * f) over its passes
    att_rule    integer[];
    att_outcome integer[];
    log_m       double precision[];   -- each attempt's expected log product of (1 - d f q)
    g           double precision[];
    h           double precision[];
    passes      double precision[];
    own_fail    double precision[];
    misled      double precision[];
    harm        double precision[];
    n_tips      integer;
    n_atts      integer;
    n_rules     integer;
    t           integer;
    u           integer;
    a           integer;
    r           integer;
    m0          double precision;
    m           double precision;
    delta       double precision;
    nq          double precision;
    own         double precision;
    skill_harm  double precision;
    old         double precision;
    change      double precision;
    sweep       integer := 0;
    converged   boolean := false;
    moving      integer;   -- tips that moved by more than 0.001 in the sweep
    tip_change  double precision;
BEGIN
    PERFORM ctxgraph._refuse_foreign_temp_objects('blame_mf_attempts', 'blame_mf_tips', 'blame_mean_field');
    -- Attempts and rules by index; units grouped by tip, each pointing at its attempt.
    DROP TABLE IF EXISTS pg_temp.blame_mf_attempts;
    CREATE TEMP TABLE blame_mf_attempts ON COMMIT DROP AS
    SELECT ba.attempt_key, ba.outcome, dense_rank() OVER (ORDER BY ba.rule_id)::integer AS rule_idx,
           row_number() OVER (ORDER BY ba.attempt_key)::integer AS idx
      FROM blame_attempts AS ba;
    SELECT coalesce(array_agg(x.rule_idx ORDER BY x.idx), '{}'), coalesce(array_agg(x.outcome ORDER BY x.idx), '{}'),
           count(*), coalesce(max(x.rule_idx), 0)
      INTO att_rule, att_outcome, n_atts, n_rules
      FROM blame_mf_attempts AS x;
    DROP TABLE IF EXISTS pg_temp.blame_mf_tips;
    CREATE TEMP TABLE blame_mf_tips ON COMMIT DROP AS
    SELECT d.tip_id, row_number() OVER (ORDER BY d.tip_id)::integer AS idx
      FROM (SELECT DISTINCT bu.tip_id FROM blame_units AS bu) AS d;
    SELECT coalesce(array_agg(x.tip_id ORDER BY x.idx), '{}'), count(*) INTO tip_ids, n_tips FROM blame_mf_tips AS x;
    -- A pass's term in a tip's update, ln(1 - failure * f), does not move between sweeps, and no
    -- one reads a pass's factor: passes are summed once per tip, and the sweeps walk failures only.
    SELECT coalesce(array_agg(x.idx ORDER BY bt.idx, x.idx), '{}'), coalesce(array_agg(failure * bu.f ORDER BY bt.idx, x.idx), '{}'),
           coalesce(array_agg(x.rule_idx ORDER BY bt.idx, x.idx), '{}'), coalesce(array_agg(x.outcome = 2 ORDER BY bt.idx, x.idx), '{}')
      INTO unit_att, unit_fd, unit_rule, unit_health
      FROM blame_units AS bu
      JOIN blame_mf_tips AS bt ON bt.tip_id = bu.tip_id
      JOIN blame_mf_attempts AS x ON x.attempt_key = bu.attempt_key
     WHERE x.outcome <> 0;
    SELECT coalesce(array_agg(s.first_unit ORDER BY s.idx), '{}'), coalesce(array_agg(s.pass_delta ORDER BY s.idx), '{}')
      INTO tip_start, pass_delta
      FROM (SELECT c.idx, c.pass_delta,
                   1 + coalesce(sum(c.failures) OVER (ORDER BY c.idx ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)::integer AS first_unit
              FROM (SELECT bt.idx, count(*) FILTER (WHERE x.outcome <> 0) AS failures,
                           coalesce(sum(ln(1 - failure * bu.f)) FILTER (WHERE x.outcome = 0), 0) AS pass_delta
                      FROM blame_mf_tips AS bt
                      JOIN blame_units AS bu ON bu.tip_id = bt.tip_id
                      JOIN blame_mf_attempts AS x ON x.attempt_key = bu.attempt_key
                     GROUP BY bt.idx) AS c) AS s;
    tip_start := tip_start || (cardinality(unit_att) + 1);
    q := array_fill(prior_share, ARRAY[greatest(n_tips, 1)]);
    step := array_fill(1.0::double precision, ARRAY[greatest(n_tips, 1)]);
    direction := array_fill(0.0::double precision, ARRAY[greatest(n_tips, 1)]);
    log_m := array_fill(0.0::double precision, ARRAY[greatest(n_atts, 1)]);
    FOR t IN 1 .. n_tips LOOP
        FOR u IN tip_start[t] .. tip_start[t + 1] - 1 LOOP
            log_m[unit_att[u]] := log_m[unit_att[u]] + ln(1 - unit_fd[u] * q[t]);
        END LOOP;
    END LOOP;
    -- Each rule's passes (fixed), its pass rate g from its outcomes alone to start, its harm share
    -- h at one half. Every rule has an attempt, so rule_idx runs 1 .. n_rules without a gap.
    SELECT coalesce(array_agg(c.passes ORDER BY c.rule_idx), '{0}'), coalesce(array_agg((c.passes + 1) / (c.n + 2) ORDER BY c.rule_idx), '{0.5}')
      INTO passes, g
      FROM (SELECT x.rule_idx, count(*) FILTER (WHERE x.outcome = 0)::double precision AS passes, count(*) AS n
              FROM blame_mf_attempts AS x GROUP BY x.rule_idx) AS c;
    h := array_fill(0.5::double precision, ARRAY[greatest(n_rules, 1)]);

    LOOP
        sweep := sweep + 1;
        change := 0;
        moving := 0;
        -- Each tip in turn: prior log odds plus, over its attempts, log L(misleading) - log L(not).
        FOR t IN 1 .. n_tips LOOP
            delta := pass_delta[t];
            old := q[t];
            -- Per unit: M without this tip (m0) and with it misleading (m0 (1 - f d)), and the
            -- log ratio of the failure's likelihood under the two, L = (1 - M) h + M (1 - g) eps
            -- for a health failure and (1 - M) (1 - h) + M (1 - g) (1 - eps) for a clean one. Two
            -- statements a unit: this loop is most of the fit's time, and a PL/pgSQL statement
            -- costs more than the arithmetic in it.
            FOR u IN tip_start[t] .. tip_start[t + 1] - 1 LOOP
                m0 := exp(greatest(log_m[unit_att[u]] - ln(1 - unit_fd[u] * old), -700));
                delta := CASE WHEN unit_health[u]
                    THEN delta + ln((1 - m0 * (1 - unit_fd[u])) * h[unit_rule[u]] + m0 * (1 - unit_fd[u]) * (1 - g[unit_rule[u]]) * eps + 1e-300)
                               - ln((1 - m0) * h[unit_rule[u]] + m0 * (1 - g[unit_rule[u]]) * eps + 1e-300)
                    ELSE delta + ln((1 - m0 * (1 - unit_fd[u])) * (1 - h[unit_rule[u]]) + m0 * (1 - unit_fd[u]) * (1 - g[unit_rule[u]]) * (1 - eps) + 1e-300)
                               - ln((1 - m0) * (1 - h[unit_rule[u]]) + m0 * (1 - g[unit_rule[u]]) * (1 - eps) + 1e-300)
                    END;
            END LOOP;
            nq := 1 / (1 + exp(least(greatest(-(ln(pi / (1 - pi)) + delta), -700), 700)));
            -- A tip that turns back (its neighbours or its rule answered its last move) takes half
            -- the step it took: on evidence this strong the new value is a step function of the
            -- others', and full steps would swing a tip on its edge from end to end for ever. In the
            -- first half of blame.max_sweeps, a tip that moves on the way it went takes a step a
            -- fifth longer, up to the full one (resilient propagation: x0.5 on a turn, x1.2 on a
            -- run); in the second half steps only shorten, so tips that swing with their neighbours
            -- in a cycle settle. With halving alone, a tip that had swung early and then had far to
            -- go crept there by its shrunken step: at 100 sweeps the 1M-row bench log still had 51
            -- tips moving by more than 0.001 (over 300 sweeps it never settled); this way it settles
            -- in 60, and a held-out 1M-row log ends with one tip moving instead of 24.
            IF (nq - old) * direction[t] < 0 THEN
                step[t] := step[t] / 2;
            ELSIF (nq - old) * direction[t] > 0 AND 2 * sweep <= max_sweeps THEN
                step[t] := least(1.0, step[t] * 1.2);
            END IF;
            direction[t] := sign(nq - old);
            nq := old + step[t] * (nq - old);
            IF abs(nq - old) > 1e-12 THEN
                FOR u IN tip_start[t] .. tip_start[t + 1] - 1 LOOP
                    log_m[unit_att[u]] := log_m[unit_att[u]] + ln(1 - unit_fd[u] * nq) - ln(1 - unit_fd[u] * old);
                END LOOP;
                q[t] := nq;
                change := greatest(change, abs(nq - old));
                moving := moving + (abs(nq - old) > 1e-3)::integer;
            END IF;
        END LOOP;
        tip_change := change;
        -- Each rule: a pass is its own success; a failure is its own with the responsibility
        -- M (1 - g) e / L, a misleading tip's otherwise, which then says how often such failures
        -- break the system. Uniform priors, as the exact fit's grids.
        own_fail := array_fill(0.0::double precision, ARRAY[greatest(n_rules, 1)]);
        misled := array_fill(0.0::double precision, ARRAY[greatest(n_rules, 1)]);
        harm := array_fill(0.0::double precision, ARRAY[greatest(n_rules, 1)]);
        FOR a IN 1 .. n_atts LOOP
            CONTINUE WHEN att_outcome[a] = 0;
            r := att_rule[a];
            m := exp(greatest(log_m[a], -700));
            IF att_outcome[a] = 2 THEN
                own := m * (1 - g[r]) * eps / ((1 - m) * h[r] + m * (1 - g[r]) * eps + 1e-300);
                harm[r] := harm[r] + 1 - own;
            ELSE
                own := m * (1 - g[r]) * (1 - eps) / ((1 - m) * (1 - h[r]) + m * (1 - g[r]) * (1 - eps) + 1e-300);
            END IF;
            own_fail[r] := own_fail[r] + own;
            misled[r] := misled[r] + 1 - own;
        END LOOP;
        -- A rule's harm share is drawn towards the skill's, as if 10 more of its failures had been
        -- a misleading tip's (the exact fit's skill-wide mixture over the harm grid does the same):
        -- a rule with two such failures would otherwise swing from one end to the other.
        skill_harm := (coalesce((SELECT sum(z) FROM unnest(harm) AS z), 0) + 1)
                      / (coalesce((SELECT sum(z) FROM unnest(misled) AS z), 0) + 2);
        FOR r IN 1 .. n_rules LOOP
            nq := (passes[r] + 1) / (passes[r] + own_fail[r] + 2);
            change := greatest(change, abs(nq - g[r]));
            g[r] := nq;
            nq := (harm[r] + 10 * skill_harm) / (misled[r] + 10);
            change := greatest(change, abs(nq - h[r]));
            h[r] := nq;
        END LOOP;
        -- pi as in the exact fit: drawn towards the prior as if 10 more tips had it, at most 0.5.
        old := pi;
        pi := least(greatest((coalesce((SELECT sum(z) FROM unnest(q) AS z), 0) + 10 * prior_share) / (n_tips + 10), 0.001), 0.5);
        change := greatest(change, abs(pi - old));
        converged := change < 1e-4;
        EXIT WHEN converged OR sweep >= max_sweeps;
    END LOOP;
    DROP TABLE IF EXISTS pg_temp.blame_mean_field;
    CREATE TEMP TABLE blame_mean_field ON COMMIT DROP AS
    SELECT x.tip_id, x.q FROM unnest(tip_ids, q[1:n_tips]) AS x (tip_id, q);
    -- Where it did not settle, how far from it: on a large skill the decisions settle long before
    -- the last few tips stop drifting (docs/benchmarks.md).
    RETURN jsonb_build_object('blame_sweeps', sweep, 'blame_converged', converged, 'fitted_misleading_share', round(pi::numeric, 6),
                              'blame_work', 2 * cardinality(unit_att) + n_atts,
                              'blame_moving_tips', coalesce(moving, 0),
                              'blame_last_tip_change', round(coalesce(tip_change, 0)::numeric, 6));
END
$$;

COMMENT ON FUNCTION ctxgraph._blame_mean_field(double precision, double precision, double precision, integer) IS
    'Private: the blame fit for a skill past blame.max_work (rules at point estimates, each tip updated from its own attempts); reads and writes _fit_tip_blame''s temporary tables.';
REVOKE ALL ON FUNCTION ctxgraph._blame_mean_field(double precision, double precision, double precision, integer) FROM PUBLIC;

-- _fit_tip_blame: which tips fail the attempts that follow them, neighbours explained away.
--
-- A latent-class model, fitted by EM. Each tip is misleading or not (prior share pi). An attempt
-- of rule r passes only if no misleading tip it followed sank it and the rule's own chance let it:
--
--     M      = product over the attempt's misleading tips t of (1 - d * f_t)
--     P(pass)                 = M * q_r
--     P(health failure)       = (1 - M) * h_r + M * (1 - q_r) * eps
--     P(clean failure)        = (1 - M) * (1 - h_r) + M * (1 - q_r) * (1 - eps)
--
-- f_t is the chance that the script followed t (from the verdict's source and reliability, or the
-- calibrated follow probability), d the chance that following a misleading tip fails the attempt
-- (blame.misleading_failure), q_r the rule's base pass rate (a uniform prior on a grid of
-- blame.base_rate_points values, integrated out), h_r the share of the rule's failures by a
-- misleading tip that break the system (on a grid of blame.harm_share_points values, integrated
-- out with q_r) and eps the share of other failures that break it (blame.unexplained_harm: DEF-26
-- reads a health failure as a tip breaking the system; fitted freely, eps absorbs the health
-- failures whose misleading tip the judge missed and shields that tip).
--
-- Fitted: pi, and the prior over the h_r grid, the skill's mixture of harm shares (each rule's
-- posterior counted once). One skill may hold tips that break the system and tips that only fail
-- the check, as the ADR's witness does, so no one share is assumed for all; but its rules tell
-- about each other. Tips with the same follow chances in the same attempts cannot be told apart
-- by any evidence: they are one unknown, misleading together or not (like the effects' columns).
--
-- The posterior is computed exactly per block: a rule's tips (each tip belongs to the rule it was
-- retrieved for most often), all 2^n subsets of misleading tips with the base-rate grid, so tips
-- followed together compete to explain a failure and a tip followed alone in a failing attempt
-- takes the blame that its neighbours shed. Tips of other rules retrieved in the same attempts
-- enter with their current posterior (a product of expected factors), and blocks are swept until
-- no posterior moves. A rule with more than blame.max_block_tips tips is split into blocks of at
-- most that many, each exact given the others (method 'partitioned'). A block's sweep does not
-- weigh every attempt against every subset: an attempt's terms depend only on which of its own
-- tips are in the subset, so it adds one coefficient per pattern of those (a Moebius transform),
-- and one subset-sum pass gives every subset its log likelihood. The answers are the direct sum's
-- (to rounding); on the bench's 4-run log a sweep took 0.7 s instead of 2.0 s.
CREATE FUNCTION ctxgraph._fit_tip_blame(skill text, as_of timestamptz)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, ctxgraph, pg_temp
SET jit = off
-- Tips are grouped by a signature of their weights written out as text: the caller's
-- extra_float_digits must not decide which tips count as one column.
SET extra_float_digits = 1
AS $$
#variable_conflict use_column
DECLARE
    judge_reliability     double precision := ctxgraph.param('blame.judge_reliability');
    embedding_reliability double precision := ctxgraph.param('blame.embedding_reliability');
    failure               double precision := ctxgraph.param('blame.misleading_failure');
    prior_share           double precision := ctxgraph.param('blame.prior_misleading');
    max_block             integer := ctxgraph.param('blame.max_block_tips')::integer;
    points                integer := ctxgraph.param('blame.base_rate_points')::integer;
    harm_points           integer := ctxgraph.param('blame.harm_share_points')::integer;
    max_sweeps            integer := ctxgraph.param('blame.max_sweeps')::integer;
    max_work              double precision := ctxgraph.param('blame.max_work');
    use_cosine            boolean := ctxgraph.param('blame.cosine_with_judge') = 1;
    work                  double precision;
    -- The cosine's two normals (followed, ignored) and their fit.
    n1 double precision; n0 double precision;
    mu1 double precision; mu0 double precision; spread double precision;
    s1 double precision; s0 double precision; sc1 double precision; sc0 double precision;
    scc1 double precision; scc0 double precision;
    cosine_iterations integer := 0;
    cosine_used boolean := false;
    -- Tips and blocks. A block's tips are contiguous in tip order.
    tip_ids     bigint[];
    tip_block   integer[];
    tip_bit     integer[];
    q           double precision[];
    block_rule  integer[];
    block_first integer[];   -- first tip index of the block
    block_size  integer[];
    block_own   boolean[];   -- the first block of its rule: counts the rule's harm share once
    -- Attempts, their units (tip index, follow chance) contiguous, and each block's attempts.
    att_rule    integer[];
    att_outcome integer[];   -- 0 pass, 1 clean failure, 2 health failure
    unit_start  integer[];
    unit_tip    integer[];
    unit_f      double precision[];
    batt_start  integer[];
    batt        integer[];
    base        double precision[];   -- posterior mean pass rate per rule
    -- The (pass rate, harm share) grid, one cell per pair.
    cells       integer;
    cell_g      double precision[];
    cell_h      double precision[];
    cell_log_g  double precision[];
    cell_k      integer[];            -- the cell's harm-share grid point
    harm_prior  double precision[];   -- the skill's mixture over the harm-share grid (fitted)
    harm_acc    double precision[];
    n_rules     integer;
    n_tips      integer;
    n_blocks    integer;
    pi          double precision;
    -- A failure of another rule's attempt is weighed at an even harm share.
    h           double precision := 0.5;
    eps         double precision := ctxgraph.param('blame.unexplained_harm');
    -- Work arrays of one block.
    n           integer;
    n_sets      integer;
    ll          double precision[];   -- per (set, grid point), failures of the block's rule
    ll_set      double precision[];   -- per set, terms that do not depend on the grid
    passes_own  integer;
    bits        integer[] := '{}';
    logs        double precision[] := '{}';
    k           integer;
    out_log     double precision;
    m           double precision;
    g           double precision;
    v           double precision;
    top         double precision;
    total       double precision;
    wt          double precision;
    own         boolean;
    summary     jsonb;
    change      double precision;
    new_base    double precision;
    sweep       integer := 0;
    converged   boolean := false;
    b           integer;
    a           integer;
    i           integer;
    j           integer;
    s           integer;
    x           integer;
    u           integer;
    t           integer;
    partitioned boolean;
    n_pats      integer;
    half        integer;
    p           integer;
    pat_set     integer[] := '{}';   -- a failure's patterns of its own tips: the block subset
    pat_log     double precision[] := '{}';   -- log M of the pattern
    pat_term    double precision[] := '{}';   -- its term per grid point, then its coefficient
    cell_tips   integer;             -- the block's tips in failures of its rule
    o0          integer;
    o1          integer;
    e           double precision;
    cell_top    double precision[];
    cell_sum    double precision[];
    group_weight double precision[];
    set_weight  double precision[];
    cell_weight double precision[];
    width       integer;             -- terms per pattern: the grid's cells, or 1
    pi_step      double precision;
    last_pi_step double precision := 0;
    mix_step      double precision[];
    last_mix_step double precision[];
    mix_since     integer := 0;
    ahead_mix     double precision[];
    since_jump   integer := 0;
    ahead        double precision;
BEGIN
    PERFORM ctxgraph._refuse_foreign_temp_objects(
        'blame_verdicts', 'blame_base_rates', 'blame_cosine_bins', 'blame_units', 'blame_members',
        'blame_attempts', 'blame_rules', 'blame_tips', 'blame_rule_sizes', 'blame_blocks',
        'blame_tip_order', 'blame_attempt_order', 'blame_block_attempts');
    IF judge_reliability NOT BETWEEN 0.5 AND 1 OR embedding_reliability NOT BETWEEN 0.5 AND 1
       OR failure NOT BETWEEN 0 AND 1 OR prior_share <= 0 OR prior_share >= 1
       OR eps NOT BETWEEN 0 AND 1 OR max_block NOT BETWEEN 1 AND 16 OR ctxgraph.param('blame.cosine_with_judge') NOT IN (0, 1) OR points < 1 OR harm_points < 1 OR max_sweeps < 1 OR max_work <= 0 THEN
        RAISE EXCEPTION 'ctxgraph: blame.* parameters out of range (reliabilities in [0.5, 1], misleading_failure and unexplained_harm in [0, 1], prior_misleading in (0, 1), max_block_tips in [1, 16], cosine_with_judge 0 or 1, base_rate_points, harm_share_points and max_sweeps at least 1, max_work positive)'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    pi := prior_share;

    -- One unit per (tip, attempt) with a known outcome: the chance f that the script followed the
    -- tip. A calibrated follow probability is used as it is. A verdict (judge, or cosine against
    -- follow.emb_threshold) is right with its reliability r either way, so the chance it carries
    -- depends on how often scripts follow tips at all (Bayes): with base rate o, a "followed" verdict
    -- means r o / (r o + (1 - r)(1 - o)) and an "ignored" one (1 - r) o / ((1 - r) o + r (1 - o)).
    -- o is read from the verdicts themselves per run and source (share said followed = r o +
    -- (1 - r)(1 - o)), drawn towards the skill's share as if 20 more verdicts had it: obedience
    -- changes between runs, and a Worker that follows little makes a "followed" verdict less sure.
    DROP TABLE IF EXISTS pg_temp.blame_verdicts;
    CREATE TEMP TABLE blame_verdicts ON COMMIT DROP AS
    SELECT sr.tip_id, sr.attempt_key, sr.rule_id, sr.run_id, sr.follow_source, sr.followed, sr.follow_probability, sr.cosine,
           CASE sr.follow_source WHEN 'judge' THEN judge_reliability WHEN 'embedding' THEN embedding_reliability END AS r
      FROM ctxgraph.scored_retrievals AS sr
     WHERE sr.skill = _fit_tip_blame.skill AND sr.retrieved_at <= _fit_tip_blame.as_of AND sr.credit IS NOT NULL;
    DROP TABLE IF EXISTS pg_temp.blame_base_rates;
    CREATE TEMP TABLE blame_base_rates ON COMMIT DROP AS
    WITH skill_shares AS (
        SELECT v.follow_source, avg(v.followed::int)::double precision AS share
          FROM blame_verdicts AS v WHERE v.r IS NOT NULL AND v.followed IS NOT NULL GROUP BY v.follow_source
    )
    SELECT c.run_id, c.follow_source, c.r,
           CASE WHEN 2 * c.r - 1 < 1e-6 THEN c.share
                ELSE least(greatest((c.share - (1 - c.r)) / (2 * c.r - 1), 0.02), 0.98) END AS o
      FROM (SELECT v.run_id, v.follow_source, min(v.r) AS r,
                   (sum(v.followed::int) + 20 * min(ss.share)) / (count(*) + 20) AS share
              FROM blame_verdicts AS v JOIN skill_shares AS ss USING (follow_source)
             WHERE v.r IS NOT NULL AND v.followed IS NOT NULL
             GROUP BY v.run_id, v.follow_source) AS c;
    -- A judge verdict's row usually carries the cosine too: a second, independent look at the same
    -- script. How far it tells followed from ignored is the skill's own: scripts that followed a tip
    -- have cosines around mu1, the others around mu0, with a common spread (two normals; the
    -- judge's verdicts are the noisy labels, each right with r), fitted by EM. Where the cosine
    -- measures topic rather than direction, mu1 and mu0 come out close and the cosine moves
    -- nothing; where it separates them it sharpens every verdict. Off with
    -- blame.cosine_with_judge = 0, and not used when mu1 <= mu0 or either verdict has fewer than
    -- 20 rows with a cosine.
    -- The fit reads cosines gathered in bins of 0.005 per run and verdict (sums of c and c^2 kept
    -- exact), so its sweeps cost the same at a thousand rows and at ten million.
    DROP TABLE IF EXISTS pg_temp.blame_cosine_bins;
    CREATE TEMP TABLE blame_cosine_bins ON COMMIT DROP AS
    SELECT v.run_id, v.followed, count(*)::double precision AS n, sum(v.cosine) AS sc, sum(v.cosine * v.cosine) AS scc,
           avg(v.cosine) AS c
      FROM blame_verdicts AS v
     WHERE v.follow_source = 'judge' AND v.followed IS NOT NULL AND v.cosine IS NOT NULL
     GROUP BY v.run_id, v.followed, round(v.cosine * 200);
    SELECT sum(cb.n) FILTER (WHERE cb.followed), sum(cb.n) FILTER (WHERE NOT cb.followed),
           sum(cb.sc) FILTER (WHERE cb.followed) / sum(cb.n) FILTER (WHERE cb.followed),
           sum(cb.sc) FILTER (WHERE NOT cb.followed) / sum(cb.n) FILTER (WHERE NOT cb.followed)
      INTO n1, n0, mu1, mu0
      FROM blame_cosine_bins AS cb;
    IF use_cosine AND n1 >= 20 AND n0 >= 20 THEN
        SELECT sum(cb.scc - 2 * CASE WHEN cb.followed THEN mu1 ELSE mu0 END * cb.sc
                   + cb.n * CASE WHEN cb.followed THEN mu1 ELSE mu0 END ^ 2) / sum(cb.n)
          INTO spread
          FROM blame_cosine_bins AS cb;
        LOOP
            cosine_iterations := cosine_iterations + 1;
            EXIT WHEN spread IS NULL OR spread < 1e-9 OR mu1 <= mu0 OR cosine_iterations > 50;
            SELECT sum(w.n * w.w), sum(w.n * (1 - w.w)), sum(w.w * w.sc), sum((1 - w.w) * w.sc), sum(w.w * w.scc), sum((1 - w.w) * w.scc)
              INTO s1, s0, sc1, sc0, scc1, scc0
              FROM (SELECT cb.n, cb.sc, cb.scc,
                           ctxgraph._follow_chance(cb.followed, br.r, br.o, cb.c, mu1, mu0, spread) AS w
                      FROM blame_cosine_bins AS cb
                      JOIN blame_base_rates AS br ON br.run_id = cb.run_id AND br.follow_source = 'judge') AS w;
            EXIT WHEN s1 < 1e-9 OR s0 < 1e-9;
            v := greatest(abs(sc1 / s1 - mu1), abs(sc0 / s0 - mu0));
            mu1 := sc1 / s1;
            mu0 := sc0 / s0;
            spread := greatest((scc1 - sc1 * sc1 / s1 + scc0 - sc0 * sc0 / s0) / (s1 + s0), 0);
            EXIT WHEN v < 1e-5;
        END LOOP;
        cosine_used := spread IS NOT NULL AND spread >= 1e-9 AND mu1 > mu0;
    END IF;
    IF NOT cosine_used THEN
        mu1 := NULL;
        mu0 := NULL;
        spread := NULL;
    END IF;
    -- What every fit records, exact or mean field: the parameters it read and the cosine's normals.
    summary := jsonb_build_object('blame.judge_reliability', judge_reliability, 'blame.embedding_reliability', embedding_reliability,
                                  'blame.misleading_failure', failure, 'blame.unexplained_harm', eps,
                                  'blame.prior_misleading', prior_share, 'blame.max_sweeps', max_sweeps,
                                  'blame.cosine_with_judge', use_cosine::int, 'blame.max_work', max_work,
                                  'follow_cosine', CASE WHEN cosine_used THEN jsonb_build_object(
                                      'followed_mean', round(mu1::numeric, 6), 'ignored_mean', round(mu0::numeric, 6),
                                      'sd', round(sqrt(spread)::numeric, 6), 'iterations', cosine_iterations) END);
    -- Chances are kept inside [0.01, 0.99]: no single verdict is certain.
    DROP TABLE IF EXISTS pg_temp.blame_units;
    CREATE TEMP TABLE blame_units ON COMMIT DROP AS
    SELECT v.tip_id, v.attempt_key, min(v.rule_id) AS rule_id,
           least(greatest(avg(CASE WHEN v.follow_source = 'signal' THEN v.follow_probability
                                   WHEN br.o IS NULL THEN 0.5
                                   WHEN v.follow_source = 'judge'
                                       THEN ctxgraph._follow_chance(v.followed, br.r, br.o, v.cosine, mu1, mu0, spread)
                                   ELSE ctxgraph._follow_chance(v.followed, br.r, br.o, NULL, NULL, NULL, NULL)
                              END), 0.01), 0.99) AS f
      FROM blame_verdicts AS v
      LEFT JOIN blame_base_rates AS br ON br.run_id = v.run_id AND br.follow_source = v.follow_source AND v.followed IS NOT NULL
     GROUP BY v.tip_id, v.attempt_key;
    -- Tips with identical units are one unknown: only the representative (smallest id) is fitted.
    DROP TABLE IF EXISTS pg_temp.blame_members;
    CREATE TEMP TABLE blame_members ON COMMIT DROP AS
    SELECT c.tip_id, min(c.tip_id) OVER (PARTITION BY c.signature) AS representative
      FROM (SELECT bu.tip_id, md5(string_agg(bu.attempt_key || ':' || bu.f, ',' ORDER BY bu.attempt_key)) AS signature
              FROM blame_units AS bu GROUP BY bu.tip_id) AS c;
    DELETE FROM blame_units AS bu
     USING blame_members AS bm WHERE bm.tip_id = bu.tip_id AND bm.representative <> bm.tip_id;
    DROP TABLE IF EXISTS pg_temp.blame_attempts;
    CREATE TEMP TABLE blame_attempts ON COMMIT DROP AS
    SELECT sr.attempt_key, min(sr.rule_id) AS rule_id,
           CASE WHEN bool_or(sr.harmful) THEN 2 WHEN avg(sr.credit) > 0 THEN 0 ELSE 1 END AS outcome
      FROM ctxgraph.scored_retrievals AS sr
     WHERE sr.skill = _fit_tip_blame.skill AND sr.retrieved_at <= _fit_tip_blame.as_of AND sr.credit IS NOT NULL
     GROUP BY sr.attempt_key;
    DROP TABLE IF EXISTS pg_temp.blame_rules;
    CREATE TEMP TABLE blame_rules ON COMMIT DROP AS
    SELECT ra.rule_id, row_number() OVER (ORDER BY ra.rule_id)::integer AS idx
      FROM (SELECT DISTINCT ba.rule_id FROM blame_attempts AS ba) AS ra;
    -- A tip's home is the rule it was retrieved for most often (then the smallest rule id); its
    -- place is its rank among the home rule's tips, cut into blocks of max_block.
    DROP TABLE IF EXISTS pg_temp.blame_tips;
    CREATE TEMP TABLE blame_tips ON COMMIT DROP AS
    SELECT h.tip_id, h.rule_idx,
           (row_number() OVER (PARTITION BY h.rule_idx ORDER BY h.tip_id) - 1)::integer AS place
      FROM (SELECT DISTINCT ON (c.tip_id) c.tip_id, br.idx AS rule_idx
              FROM (SELECT bu.tip_id, bu.rule_id, count(*) AS n FROM blame_units AS bu GROUP BY bu.tip_id, bu.rule_id) AS c
              JOIN blame_rules AS br ON br.rule_id = c.rule_id
             ORDER BY c.tip_id, c.n DESC, c.rule_id) AS h;
    -- The work of one sweep: per block, every subset of its tips against every attempt of its rule
    -- and every grid cell. Blocks shrink until it fits blame.max_work; past that even for blocks
    -- of one tip, the rules' grids give way to point estimates (_blame_mean_field).
    -- Each rule's tips and attempts are counted once (counted per rule inside the loop, they
    -- took 57 s of a 1M-row log's fit).
    cells := points * harm_points;
    DROP TABLE IF EXISTS pg_temp.blame_rule_sizes;
    CREATE TEMP TABLE blame_rule_sizes ON COMMIT DROP AS
    SELECT br.idx, coalesce(nt.tips, 0)::integer AS tips, coalesce(na.attempts, 0) AS attempts
      FROM blame_rules AS br
      LEFT JOIN (SELECT bt.rule_idx, count(*) AS tips FROM blame_tips AS bt GROUP BY bt.rule_idx) AS nt ON nt.rule_idx = br.idx
      LEFT JOIN (SELECT ba.rule_id, count(*) AS attempts FROM blame_attempts AS ba GROUP BY ba.rule_id) AS na ON na.rule_id = br.rule_id;
    LOOP
        SELECT coalesce(sum(ceil(greatest(c.tips, 1)::numeric / max_block) * 2 ^ least(max_block, c.tips) * c.attempts), 0) * cells
          INTO work
          FROM blame_rule_sizes AS c;
        EXIT WHEN work <= max_work OR max_block = 1;
        max_block := max_block - 1;
    END LOOP;
    IF work > max_work THEN
        -- Too large for exact blocks even of one tip: rules at point estimates (_blame_mean_field).
        summary := summary || jsonb_build_object('exact_blame_work', work, 'blame_method', 'mean_field')
                   || ctxgraph._blame_mean_field(failure, eps, prior_share, max_sweeps);
        IF NOT (summary ->> 'blame_converged')::boolean THEN
            RAISE NOTICE 'ctxgraph: the blame fit of % (mean_field) did not settle in blame.max_sweeps (%) sweeps: % tips moved by more than 0.001 in the last one (largest %)',
                skill, max_sweeps, summary ->> 'blame_moving_tips', summary ->> 'blame_last_tip_change';
        END IF;
        UPDATE ctxgraph.tip_effects AS e
           SET misleading_probability = least(greatest(mf.q, 0), 1), parameters = e.parameters || summary
          FROM blame_members AS bm
          JOIN blame_mean_field AS mf ON mf.tip_id = bm.representative
         WHERE e.skill = _fit_tip_blame.skill AND e.tip_id = bm.tip_id;
        RETURN summary;
    END IF;
    -- Blocks: every rule has at least one (a rule without tips of its own still fits its base
    -- rate); a rule's tips fill blocks of max_block in place order.
    DROP TABLE IF EXISTS pg_temp.blame_blocks;
    CREATE TEMP TABLE blame_blocks ON COMMIT DROP AS
    SELECT rs.idx AS rule_idx, c.chunk,
           row_number() OVER (ORDER BY rs.idx, c.chunk)::integer AS block
      FROM blame_rule_sizes AS rs
      CROSS JOIN LATERAL generate_series(0, greatest(rs.tips - 1, 0) / max_block) AS c (chunk);
    DROP TABLE IF EXISTS pg_temp.blame_tip_order;
    CREATE TEMP TABLE blame_tip_order ON COMMIT DROP AS
    SELECT bt.tip_id, bb.block, bt.place % max_block AS bit,
           row_number() OVER (ORDER BY bb.block, bt.place)::integer AS idx
      FROM blame_tips AS bt
      JOIN blame_blocks AS bb ON bb.rule_idx = bt.rule_idx AND bb.chunk = bt.place / max_block;

    SELECT coalesce(array_agg(o.tip_id ORDER BY o.idx), '{}'), coalesce(array_agg(o.block ORDER BY o.idx), '{}'),
           coalesce(array_agg(o.bit ORDER BY o.idx), '{}')
      INTO tip_ids, tip_block, tip_bit
      FROM blame_tip_order AS o;
    n_tips := cardinality(tip_ids);
    IF n_tips = 0 THEN
        RETURN jsonb_build_object('tips', 0, 'converged', true);
    END IF;
    SELECT array_agg(bb.rule_idx ORDER BY bb.block),
           array_agg(coalesce(f.first_idx, 0) ORDER BY bb.block),
           array_agg(coalesce(f.n, 0)::integer ORDER BY bb.block),
           array_agg(bb.chunk = 0 ORDER BY bb.block)
      INTO block_rule, block_first, block_size, block_own
      FROM blame_blocks AS bb
      LEFT JOIN (SELECT o.block, min(o.idx) AS first_idx, count(*) AS n FROM blame_tip_order AS o GROUP BY o.block) AS f
        ON f.block = bb.block;
    n_blocks := cardinality(block_rule);
    partitioned := EXISTS (SELECT 1 FROM blame_blocks AS bb WHERE bb.chunk > 0);

    -- Attempts in rule order, each with its units.
    DROP TABLE IF EXISTS pg_temp.blame_attempt_order;
    CREATE TEMP TABLE blame_attempt_order ON COMMIT DROP AS
    SELECT ba.attempt_key, br.idx AS rule_idx, ba.outcome,
           row_number() OVER (ORDER BY br.idx, ba.attempt_key)::integer AS idx
      FROM blame_attempts AS ba JOIN blame_rules AS br ON br.rule_id = ba.rule_id;
    SELECT array_agg(ao.rule_idx ORDER BY ao.idx), array_agg(ao.outcome ORDER BY ao.idx)
      INTO att_rule, att_outcome
      FROM blame_attempt_order AS ao;
    SELECT array_agg(o.idx ORDER BY ao.idx, o.idx), array_agg(bu.f ORDER BY ao.idx, o.idx)
      INTO unit_tip, unit_f
      FROM blame_units AS bu
      JOIN blame_attempt_order AS ao ON ao.attempt_key = bu.attempt_key
      JOIN blame_tip_order AS o ON o.tip_id = bu.tip_id;
    unit_start := ARRAY(SELECT 1 + coalesce(sum(c.n) OVER (ORDER BY c.idx ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)::integer
                          FROM (SELECT ao.idx, count(bu.tip_id) AS n
                                  FROM blame_attempt_order AS ao
                                  LEFT JOIN blame_units AS bu ON bu.attempt_key = ao.attempt_key
                                 GROUP BY ao.idx) AS c ORDER BY c.idx)
                  || (cardinality(unit_tip) + 1);
    -- Each block's attempts: those of its rule and those elsewhere that retrieved one of its tips.
    DROP TABLE IF EXISTS pg_temp.blame_block_attempts;
    CREATE TEMP TABLE blame_block_attempts ON COMMIT DROP AS
    SELECT bb.block, ao.idx AS att FROM blame_blocks AS bb JOIN blame_attempt_order AS ao ON ao.rule_idx = bb.rule_idx
    UNION
    SELECT o.block, ao.idx FROM blame_units AS bu
      JOIN blame_tip_order AS o ON o.tip_id = bu.tip_id
      JOIN blame_attempt_order AS ao ON ao.attempt_key = bu.attempt_key;
    SELECT array_agg(x.att ORDER BY x.block, x.att) INTO batt FROM blame_block_attempts AS x;
    batt_start := ARRAY(SELECT 1 + coalesce(sum(c.n) OVER (ORDER BY c.block ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)::integer
                          FROM (SELECT bb.block, count(x.att) AS n
                                  FROM blame_blocks AS bb LEFT JOIN blame_block_attempts AS x ON x.block = bb.block
                                 GROUP BY bb.block) AS c ORDER BY c.block)
                  || (cardinality(batt) + 1);

    SELECT array_agg((gp - 0.5) / points ORDER BY gp, hp), array_agg((hp - 0.5) / harm_points ORDER BY gp, hp),
           array_agg(ln((gp - 0.5) / points) ORDER BY gp, hp), array_agg(hp ORDER BY gp, hp)
      INTO cell_g, cell_h, cell_log_g, cell_k
      FROM generate_series(1, points) AS gp, generate_series(1, harm_points) AS hp;
    q := array_fill(pi, ARRAY[n_tips]);
    n_rules := (SELECT count(*) FROM blame_rules);
    base := array_fill(0.5::double precision, ARRAY[n_rules]);
    harm_prior := array_fill(1.0::double precision / harm_points, ARRAY[harm_points]);

    LOOP
        sweep := sweep + 1;
        change := 0;
        harm_acc := array_fill(0.0::double precision, ARRAY[harm_points]);
        FOR b IN 1 .. n_blocks LOOP
            n := block_size[b];
            n_sets := 1 << n;
            -- ll and ll_set first hold each subset's own coefficient (what the subset adds beyond
            -- its proper subsets, a Moebius transform), then, after one subset-sum pass, the log
            -- likelihood of every (subset, grid point). An attempt's terms depend only on which of
            -- its own k tips of the block are in the subset, so it adds 2^k coefficients instead of
            -- a term to every one of the block's 2^n subsets; a pass is linear in its tips' logs
            -- and adds k + 1.
            ll := array_fill(0.0::double precision, ARRAY[n_sets * cells]);
            ll_set := array_fill(0.0::double precision, ARRAY[n_sets]);
            passes_own := 0;
            cell_tips := 0;
            FOR x IN batt_start[b] .. batt_start[b + 1] - 1 LOOP
                a := batt[x];
                own := att_rule[a] = block_rule[b];
                k := 0;
                out_log := 0;
                FOR u IN unit_start[a] .. unit_start[a + 1] - 1 LOOP
                    t := unit_tip[u];
                    IF tip_block[t] = b THEN
                        k := k + 1;
                        bits[k] := tip_bit[t];
                        logs[k] := ln(1 - failure * unit_f[u] + 1e-300);
                    ELSE
                        out_log := out_log + ln(1 - failure * unit_f[u] * q[t] + 1e-300);
                    END IF;
                END LOOP;
                IF att_outcome[a] = 0 THEN
                    -- A pass: M * q, whose q part is passes_own * ln(grid) for the own rule.
                    IF own THEN
                        passes_own := passes_own + 1;
                        ll_set[1] := ll_set[1] + out_log;
                    ELSE
                        ll_set[1] := ll_set[1] + out_log + ln(base[att_rule[a]]);
                    END IF;
                    FOR j IN 1 .. k LOOP
                        ll_set[(1 << bits[j]) + 1] := ll_set[(1 << bits[j]) + 1] + logs[j];
                    END LOOP;
                    CONTINUE;
                END IF;
                -- A failure: its term for each pattern p of its own tips (the block subset
                -- pat_set[p], log M pat_log[p]), then their Moebius transform over the k tips.
                n_pats := 1 << k;
                pat_set[1] := 0;
                pat_log[1] := out_log;
                FOR j IN 1 .. k LOOP
                    half := 1 << (j - 1);
                    FOR p IN 1 .. half LOOP
                        pat_set[half + p] := pat_set[p] | (1 << bits[j]);
                        pat_log[half + p] := pat_log[p] + logs[j];
                    END LOOP;
                END LOOP;
                -- Each pattern's terms, width of them: one per grid point for a failure of the
                -- block's rule, one for another rule's (its pass rate at its point estimate).
                IF own THEN
                    width := cells;
                    cell_tips := cell_tips | pat_set[n_pats];
                    FOR p IN 1 .. n_pats LOOP
                        -- exp() raises an error rather than return 0 below e^-745: floor it.
                        m := exp(greatest(pat_log[p], -700));
                        FOR i IN 1 .. cells LOOP
                            g := cell_g[i];
                            pat_term[(p - 1) * cells + i] := ln(
                                CASE WHEN att_outcome[a] = 2 THEN (1 - m) * cell_h[i] + m * (1 - g) * eps
                                     ELSE (1 - m) * (1 - cell_h[i]) + m * (1 - g) * (1 - eps) END + 1e-300);
                        END LOOP;
                    END LOOP;
                ELSE
                    width := 1;
                    g := base[att_rule[a]];
                    FOR p IN 1 .. n_pats LOOP
                        m := exp(greatest(pat_log[p], -700));
                        pat_term[p] := ln(
                            CASE WHEN att_outcome[a] = 2 THEN (1 - m) * h + m * (1 - g) * eps
                                 ELSE (1 - m) * (1 - h) + m * (1 - g) * (1 - eps) END + 1e-300);
                    END LOOP;
                END IF;
                -- The Moebius transform over the k tips: the patterns holding tip j (the upper
                -- half of every run of 2 * half, contiguous terms) lose those of the pattern
                -- without it.
                FOR j IN 0 .. k - 1 LOOP
                    half := 1 << j;
                    FOR p IN 0 .. n_pats - 1 BY 2 * half LOOP
                        FOR i IN (p + half) * width + 1 .. (p + 2 * half) * width LOOP
                            pat_term[i] := pat_term[i] - pat_term[i - half * width];
                        END LOOP;
                    END LOOP;
                END LOOP;
                IF own THEN
                    FOR p IN 1 .. n_pats LOOP
                        s := pat_set[p] * cells;
                        FOR i IN 1 .. cells LOOP
                            ll[s + i] := ll[s + i] + pat_term[(p - 1) * cells + i];
                        END LOOP;
                    END LOOP;
                ELSE
                    FOR p IN 1 .. n_pats LOOP
                        ll_set[pat_set[p] + 1] := ll_set[pat_set[p] + 1] + pat_term[p];
                    END LOOP;
                END IF;
            END LOOP;
            -- The prior over subsets (a tip misleading with pi), and what every subset has: the
            -- own passes' ln(grid) and the harm-share mixture's weight.
            ll_set[1] := ll_set[1] + n * ln(1 - pi);
            FOR j IN 0 .. n - 1 LOOP
                ll_set[(1 << j) + 1] := ll_set[(1 << j) + 1] + ln(pi) - ln(1 - pi);
            END LOOP;
            FOR i IN 1 .. cells LOOP
                ll[i] := ll[i] + passes_own * cell_log_g[i] + ln(harm_prior[cell_k[i]]);
            END LOOP;
            -- Subset sums: a subset's log likelihood is the sum of its subsets' coefficients. The
            -- grid's part has coefficients only on subsets of cell_tips (the tips of the rule's own
            -- failures), so it is summed over those alone and read at s & cell_tips.
            FOR j IN 0 .. n - 1 LOOP
                half := 1 << j;
                -- The subsets holding tip j: half of every run of 2 * half, walked without a test.
                FOR p IN 0 .. n_sets - 1 BY 2 * half LOOP
                    FOR s IN p + half .. p + 2 * half - 1 LOOP
                        ll_set[s + 1] := ll_set[s + 1] + ll_set[s - half + 1];
                    END LOOP;
                END LOOP;
                CONTINUE WHEN cell_tips & half = 0;
                s := cell_tips;
                LOOP   -- every subset of cell_tips, walked by s := (s - 1) & cell_tips
                    IF s & half <> 0 THEN
                        o1 := s * cells;
                        o0 := (s - half) * cells;
                        FOR i IN 1 .. cells LOOP
                            ll[o1 + i] := ll[o1 + i] + ll[o0 + i];
                        END LOOP;
                    END IF;
                    EXIT WHEN s = 0;
                    s := (s - 1) & cell_tips;
                END LOOP;
            END LOOP;
            -- The weight of (s, i) is exp(ll_set[s] + ll[s & cell_tips, i] - top): a subset factor
            -- times a grid factor, each normalised from its largest, so each is summed once. ll
            -- now takes the grid factors. Each factor is floored at e^-340, so that their product
            -- stays above the smallest double (float8 multiplication raises on underflow); a
            -- weight that small beside the largest, 1, moves nothing.
            cell_top := array_fill(0.0::double precision, ARRAY[n_sets]);
            cell_sum := array_fill(0.0::double precision, ARRAY[n_sets]);
            s := cell_tips;
            LOOP
                o1 := s * cells;
                v := '-Infinity';
                FOR i IN 1 .. cells LOOP
                    v := greatest(v, ll[o1 + i]);
                END LOOP;
                cell_top[s + 1] := v;
                wt := 0;
                FOR i IN 1 .. cells LOOP
                    e := exp(greatest(ll[o1 + i] - v, -340));
                    ll[o1 + i] := e;
                    wt := wt + e;
                END LOOP;
                cell_sum[s + 1] := wt;
                EXIT WHEN s = 0;
                s := (s - 1) & cell_tips;
            END LOOP;
            top := '-Infinity';
            FOR s IN 0 .. n_sets - 1 LOOP
                top := greatest(top, ll_set[s + 1] + cell_top[(s & cell_tips) + 1]);
            END LOOP;
            group_weight := array_fill(0.0::double precision, ARRAY[n_sets]);
            set_weight := array_fill(0.0::double precision, ARRAY[n_sets]);
            total := 0;
            FOR s IN 0 .. n_sets - 1 LOOP
                o0 := (s & cell_tips) + 1;
                e := exp(greatest(ll_set[s + 1] + cell_top[o0] - top, -340));
                group_weight[o0] := group_weight[o0] + e;
                set_weight[s + 1] := e * cell_sum[o0];
                total := total + set_weight[s + 1];
            END LOOP;
            cell_weight := array_fill(0.0::double precision, ARRAY[cells]);
            s := cell_tips;
            LOOP
                wt := group_weight[s + 1];
                o1 := s * cells;
                FOR i IN 1 .. cells LOOP
                    cell_weight[i] := cell_weight[i] + wt * ll[o1 + i];
                END LOOP;
                EXIT WHEN s = 0;
                s := (s - 1) & cell_tips;
            END LOOP;
            new_base := 0;
            FOR i IN 1 .. cells LOOP
                new_base := new_base + cell_weight[i] / total * cell_g[i];
                IF block_own[b] THEN
                    harm_acc[cell_k[i]] := harm_acc[cell_k[i]] + cell_weight[i] / total;
                END IF;
            END LOOP;
            FOR j IN 0 .. n - 1 LOOP
                half := 1 << j;
                wt := 0;
                FOR p IN 0 .. n_sets - 1 BY 2 * half LOOP
                    FOR s IN p + half .. p + 2 * half - 1 LOOP
                        wt := wt + set_weight[s + 1];
                    END LOOP;
                END LOOP;
                wt := wt / total;
                change := greatest(change, abs(wt - q[block_first[b] + j]));
                q[block_first[b] + j] := wt;
            END LOOP;
            base[block_rule[b]] := new_base;
        END LOOP;
        -- M-step. pi is drawn towards blame.prior_misleading as if 10 more tips had that share (a
        -- skill with a handful of tips keeps the prior) and stays at most 0.5, so that
        -- "misleading" keeps its meaning.
        v := pi;
        pi := least(greatest((coalesce((SELECT sum(z) FROM unnest(q) AS z), 0) + 10 * prior_share) / (n_tips + 10), 0.001), 0.5);
        -- At most every third sweep pi jumps ahead (_aitken_share): the sweep after a jump is the
        -- tips answering it, not pi's own step.
        pi_step := pi - v;
        since_jump := since_jump + 1;
        IF since_jump >= 3 THEN
            ahead := ctxgraph._aitken_share(pi, pi_step, last_pi_step);
            IF ahead <> pi THEN
                pi := ahead;
                since_jump := 0;
            END IF;
        END IF;
        last_pi_step := pi_step;
        change := greatest(change, abs(pi - v));
        -- The harm-share mixture: each rule's posterior over the grid, with one pseudo-rule per
        -- grid point so that no share is ruled out for good.
        mix_step := array_fill(0.0::double precision, ARRAY[harm_points]);
        FOR i IN 1 .. harm_points LOOP
            v := (harm_acc[i] + 1) / (n_rules + harm_points);
            change := greatest(change, abs(harm_prior[i] - v));
            mix_step[i] := v - harm_prior[i];
            harm_prior[i] := v;
        END LOOP;
        -- And at most every third sweep the mixture jumps ahead (_aitken_mixture), each weight kept
        -- at least the EM update's own floor, one pseudo-rule's share.
        mix_since := mix_since + 1;
        IF mix_since >= 3 AND last_mix_step IS NOT NULL THEN
            ahead_mix := ctxgraph._aitken_mixture(harm_prior, mix_step, last_mix_step, 1.0 / (n_rules + harm_points));
            IF ahead_mix <> harm_prior THEN
                -- A jump is a move like any other: the fit has not settled across one.
                FOR i IN 1 .. harm_points LOOP
                    change := greatest(change, abs(ahead_mix[i] - harm_prior[i]));
                END LOOP;
                harm_prior := ahead_mix;
                mix_since := 0;
            END IF;
        END IF;
        last_mix_step := mix_step;
        converged := change < 1e-4;
        EXIT WHEN converged OR sweep >= max_sweeps;
    END LOOP;
    IF NOT converged THEN
        RAISE NOTICE 'ctxgraph: the blame fit of % did not settle in blame.max_sweeps (%) sweeps (last change %)',
            skill, max_sweeps, change;
    END IF;

    summary := summary || jsonb_build_object('blame.max_block_tips', ctxgraph.param('blame.max_block_tips'),
                                  'blame.base_rate_points', points, 'blame.harm_share_points', harm_points,
                                  'blame_method', CASE WHEN partitioned THEN 'partitioned' ELSE 'exact' END,
                                  'blame_block_tips', max_block, 'blame_work', work,
                                  'blame_sweeps', sweep, 'blame_converged', converged,
                                  'fitted_misleading_share', round(pi::numeric, 6),
                                  'fitted_harm_share_mixture', (SELECT jsonb_agg(round(hp::numeric, 6) ORDER BY o)
                                                                  FROM unnest(harm_prior) WITH ORDINALITY AS x (hp, o)));
    UPDATE ctxgraph.tip_effects AS e
       SET misleading_probability = least(greatest(o.q, 0), 1), parameters = e.parameters || summary
      FROM blame_members AS bm
      JOIN unnest(tip_ids, q) AS o (tip_id, q) ON o.tip_id = bm.representative
     WHERE e.skill = _fit_tip_blame.skill AND e.tip_id = bm.tip_id;
    RETURN summary;
END
$$;

COMMENT ON FUNCTION ctxgraph._fit_tip_blame(text, timestamptz) IS
    'Private: fits ctxgraph.tip_effects.misleading_probability for a skill from its scored retrievals up to as_of (latent-class blame, EM); returns the fit''s summary.';
REVOKE ALL ON FUNCTION ctxgraph._fit_tip_blame(text, timestamptz) FROM PUBLIC;

CREATE OR REPLACE FUNCTION ctxgraph.refresh_tip_effects(skill text, as_of timestamptz DEFAULT now())
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
SET jit = off
-- Tips are grouped by a signature of their weights written out as text: the caller's
-- extra_float_digits must not decide which tips count as one column.
SET extra_float_digits = 1
AS $$
#variable_conflict use_column
DECLARE
    lambda      double precision := ctxgraph.param('effects.ridge_lambda');
    z           double precision := ctxgraph.param('effects.bound_z');
    max_columns integer := ctxgraph.param('effects.max_component_tips')::integer;
    max_iter    integer := ctxgraph.param('effects.max_iterations')::integer;
    max_sweeps  integer := ctxgraph.param('effects.max_sweeps')::integer;
    -- Rule intercepts get a token penalty only: enough to keep the intercept of a rule whose
    -- attempts all fail (or all pass) finite, too little to pull any rule towards even odds.
    intercept_penalty constant double precision := 1e-4;
    component   record;
    tips        bigint[];
    rules       text[];
    n_rules     integer;
    p           integer;
    n_attempts  integer;
    targets     double precision[];
    row_start   integer[];
    col_index   integer[];
    col_value   double precision[];
    theta       double precision[];
    info        double precision[];
    score       double precision[];
    solved      record;
    eta         double precision;
    prob        double precision;
    wgt         double precision;
    work        double precision;
    change      double precision;
    iteration   integer;
    iterations_used integer;
    i           integer;
    j           integer;
    k           integer;
    m           integer;
    -- The blockwise fit of a large group: column -> block (its rule) and position in the block,
    -- the block's columns and the attempts its columns appear in (both as compressed lists), the
    -- block's entries of the design, the linear predictor per attempt and the variances it leaves.
    col_block   integer[];
    col_local   integer[];
    block_cols  integer[];
    block_col_start integer[];
    entry_att   integer[];
    entry_local integer[];
    entry_value double precision[];
    block_entry_start integer[];
    group_start integer[];
    block_group_start integer[];
    grp         integer;
    eta_of      double precision[];
    variance    double precision[];
    b           integer;
    nb          integer;
    q           integer;
    lk          integer;
    col         integer;
    step        double precision[];
    step_scale  double precision;
    converged   boolean;
    final_pass  boolean;
BEGIN
    PERFORM ctxgraph._refuse_foreign_temp_objects(
        'effect_units', 'effect_columns', 'effect_attempts', 'effect_rule_tips', 'effect_fit',
        'effect_design');
    PERFORM ctxgraph._require_skill(refresh_tip_effects.skill);
    IF refresh_tip_effects.as_of IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: refresh_tip_effects needs as_of' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT pg_catalog.isfinite(refresh_tip_effects.as_of) THEN
        -- infinity is no instant: nothing may be retired, restored or fitted "as of" it.
        RAISE EXCEPTION 'ctxgraph: refresh_tip_effects needs a finite as_of, got %', refresh_tip_effects.as_of
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- One fit per skill at a time: two passes ending together would otherwise both replace the
    -- skill's rows. The second waits, then refits on what the first committed.
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('ctxgraph.refresh_tip_effects'),
                                             pg_catalog.hashtext(refresh_tip_effects.skill));
    IF lambda <= 0 OR max_iter < 1 OR max_sweeps < 1 THEN
        RAISE EXCEPTION 'ctxgraph: effects.ridge_lambda must be positive, effects.max_iterations and effects.max_sweeps at least 1'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- One unit per (tip, attempt): the attempt's credit and the tip's follow weight in it.
    DROP TABLE IF EXISTS pg_temp.effect_units;
    CREATE TEMP TABLE effect_units ON COMMIT DROP AS
    SELECT s.tip_id, s.attempt_key, min(s.rule_id) AS rule_id, avg(s.follow_weight) AS w, avg(s.credit) AS y
      FROM ctxgraph.scored_retrievals AS s
     WHERE s.skill = refresh_tip_effects.skill AND s.retrieved_at <= refresh_tip_effects.as_of
     GROUP BY s.tip_id, s.attempt_key;
    -- Tips with identical follow weights in every attempt are one column: each keeps the group's
    -- representative (its smallest id), and only representatives enter the fit.
    DROP TABLE IF EXISTS pg_temp.effect_columns;
    CREATE TEMP TABLE effect_columns ON COMMIT DROP AS
    SELECT c.tip_id, min(c.tip_id) OVER (PARTITION BY c.signature) AS representative,
           count(*) OVER (PARTITION BY c.signature) AS co_followed
      FROM (SELECT u.tip_id, md5(string_agg(u.attempt_key || ':' || u.w, ',' ORDER BY u.attempt_key)) AS signature
              FROM effect_units AS u GROUP BY u.tip_id) AS c;
    DELETE FROM effect_units AS u
     USING effect_columns AS c WHERE c.tip_id = u.tip_id AND c.representative <> c.tip_id;
    -- Attempts, with their graded outcome as a success share: a failure (0 or the negative value
    -- of a health failure) is 0, a pass its DEF-26 value.
    DROP TABLE IF EXISTS pg_temp.effect_attempts;
    CREATE TEMP TABLE effect_attempts ON COMMIT DROP AS
    SELECT u.attempt_key, min(u.rule_id) AS rule_id, least(greatest(avg(u.y), 0), 1) AS target
      FROM effect_units AS u GROUP BY u.attempt_key;
    DROP TABLE IF EXISTS pg_temp.effect_rule_tips;
    CREATE TEMP TABLE effect_rule_tips ON COMMIT DROP AS
    SELECT DISTINCT u.rule_id, u.tip_id FROM effect_units AS u;

    -- Groups of tips linked by shared rules: label propagation to the smallest tip id.
    DROP TABLE IF EXISTS pg_temp.effect_fit;
    CREATE TEMP TABLE effect_fit ON COMMIT DROP AS
    SELECT DISTINCT rt.tip_id, rt.tip_id AS label, NULL::double precision AS effect,
           NULL::double precision AS inverse_diagonal, NULL::integer AS component_tips, NULL::text AS method,
           NULL::integer AS iterations
      FROM effect_rule_tips AS rt;
    LOOP
        WITH rule_label AS (
            SELECT rt.rule_id, min(f.label) AS label
              FROM effect_rule_tips AS rt JOIN effect_fit AS f ON f.tip_id = rt.tip_id
             GROUP BY rt.rule_id
        ),
        best AS (
            SELECT rt.tip_id, min(rl.label) AS label
              FROM effect_rule_tips AS rt JOIN rule_label AS rl ON rl.rule_id = rt.rule_id
             GROUP BY rt.tip_id
        )
        UPDATE effect_fit AS f SET label = b.label
          FROM best AS b
         WHERE b.tip_id = f.tip_id AND b.label < f.label;
        GET DIAGNOSTICS k = ROW_COUNT;
        EXIT WHEN k = 0;
    END LOOP;

    FOR component IN SELECT DISTINCT f.label FROM effect_fit AS f ORDER BY f.label LOOP
        tips := ARRAY(SELECT f.tip_id FROM effect_fit AS f WHERE f.label = component.label ORDER BY f.tip_id);
        rules := ARRAY(SELECT DISTINCT rt.rule_id FROM effect_rule_tips AS rt
                         JOIN effect_fit AS f ON f.tip_id = rt.tip_id
                        WHERE f.label = component.label ORDER BY rt.rule_id);
        n_rules := cardinality(rules);
        p := n_rules + cardinality(tips);
        -- The design, one sparse row per attempt of these rules (compressed rows: row_start[i] ..
        -- row_start[i + 1] - 1 index col_index and col_value): its rule's intercept column
        -- (1 .. n_rules) with value 1, then each of its tips' columns with the follow weight.
        -- Positions come from joins, not array searches, so a group of thousands of tips costs
        -- what its rows cost.
        CREATE TEMP TABLE IF NOT EXISTS effect_design (r integer, pos integer, col integer, val double precision)
            ON COMMIT DROP;
        TRUNCATE effect_design;
        INSERT INTO effect_design (r, pos, col, val)
        WITH rule_col AS (
            SELECT rr.rule_id, rr.ord::integer AS col FROM unnest(rules) WITH ORDINALITY AS rr (rule_id, ord)
        ),
        tip_col AS (
            SELECT tt.tip_id, n_rules + tt.ord::integer AS col FROM unnest(tips) WITH ORDINALITY AS tt (tip_id, ord)
        ),
        att AS (
            SELECT a.attempt_key, rc.col AS rule_col, row_number() OVER (ORDER BY a.attempt_key)::integer AS r
              FROM effect_attempts AS a JOIN rule_col AS rc ON rc.rule_id = a.rule_id
        )
        SELECT att.r, 0, att.rule_col, 1.0 FROM att
        UNION ALL
        SELECT att.r, 1, tc.col, u.w
          FROM att JOIN effect_units AS u ON u.attempt_key = att.attempt_key
          JOIN tip_col AS tc ON tc.tip_id = u.tip_id
         -- A tip the script ignored (weight 0) adds exactly nothing to the attempt's predictor,
         -- score or information, so its entry is left out: 43% of the bench's 1M-row log's units.
         WHERE u.w <> 0;
        targets := ARRAY(SELECT a.target FROM effect_attempts AS a WHERE a.rule_id = ANY (rules) ORDER BY a.attempt_key);
        n_attempts := cardinality(targets);
        SELECT array_agg(d.col ORDER BY d.r, d.pos, d.col), array_agg(d.val ORDER BY d.r, d.pos, d.col)
          INTO col_index, col_value
          FROM effect_design AS d;
        row_start := ARRAY(SELECT 1 + coalesce(sum(c.n) OVER (ORDER BY c.r ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)::integer
                             FROM (SELECT d.r, count(*) AS n FROM effect_design AS d GROUP BY d.r) AS c ORDER BY c.r)
                     || (cardinality(col_index) + 1);

        IF p > max_columns THEN
            -- Too large to solve at once (the dense step grows with the cube of the columns): the
            -- same penalised likelihood is maximised block by block. A block is one rule's
            -- intercept with the tips retrieved mostly for that rule (their home rule: most
            -- attempts, then the smallest rule id); each sweep takes one Newton step per block
            -- with every other block held at its current value, and updates the linear predictor
            -- of the attempts the block touches. The objective is concave, so the sweeps climb to
            -- the exact fit's optimum: the effects equal the exact solve's once settled. The
            -- std errors are the block's own (the others held fixed), so they account for the
            -- tips of the same rule and its intercept but not for tips of other rules followed in
            -- the same attempts: smaller than or equal to the exact solve's.
            col_block := ARRAY(SELECT g FROM generate_series(1, n_rules) AS g)
                      || ARRAY(SELECT h.block FROM unnest(tips) WITH ORDINALITY AS tt (tip_id, ord)
                                 JOIN (SELECT DISTINCT ON (c.tip_id) c.tip_id, rr.ord::integer AS block
                                         FROM (SELECT u.tip_id, u.rule_id, count(*) AS n
                                                 FROM effect_units AS u
                                                 JOIN unnest(tips) AS mine (tip_id) ON mine.tip_id = u.tip_id
                                                GROUP BY u.tip_id, u.rule_id) AS c
                                         JOIN unnest(rules) WITH ORDINALITY AS rr (rule_id, ord) ON rr.rule_id = c.rule_id
                                        ORDER BY c.tip_id, c.n DESC, c.rule_id) AS h ON h.tip_id = tt.tip_id
                                ORDER BY tt.ord);
            col_local := ARRAY(SELECT row_number() OVER (PARTITION BY cb.block ORDER BY cb.col)::integer
                                 FROM unnest(col_block) WITH ORDINALITY AS cb (block, col) ORDER BY cb.col);
            block_cols := ARRAY(SELECT cb.col::integer FROM unnest(col_block) WITH ORDINALITY AS cb (block, col)
                                 ORDER BY cb.block, cb.col);
            block_col_start := ARRAY(SELECT 1 + coalesce(sum(c.n) OVER (ORDER BY c.block ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)::integer
                                       FROM (SELECT cb.block, count(*) AS n FROM unnest(col_block) AS cb (block)
                                              GROUP BY cb.block) AS c ORDER BY c.block)
                               || (p + 1);
            -- Each block's entries of the design, grouped by attempt: (attempt, position in the
            -- block, value). A block's step reads only these; the attempt's linear predictor is
            -- kept up to date as blocks move, so the rest of the row is never read again.
            SELECT array_agg(e.r ORDER BY e.block, e.r, e.lk), array_agg(e.lk ORDER BY e.block, e.r, e.lk),
                   array_agg(e.val ORDER BY e.block, e.r, e.lk)
              INTO entry_att, entry_local, entry_value
              FROM (SELECT d.r, cb.block::integer AS block, cb.lk, d.val
                      FROM effect_design AS d
                      JOIN unnest(col_block, col_local) WITH ORDINALITY AS cb (block, lk, col) ON cb.col = d.col) AS e;
            block_entry_start := ARRAY(SELECT 1 + coalesce(sum(c.n) OVER (ORDER BY c.block ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)::integer
                                         FROM (SELECT cb.block, count(*) AS n
                                                 FROM effect_design AS d
                                                 JOIN unnest(col_block) WITH ORDINALITY AS cb (block, col) ON cb.col = d.col
                                                GROUP BY cb.block) AS c
                                        ORDER BY c.block)
                                 || (cardinality(entry_att) + 1);
            -- The same entries as groups of one attempt each, found once here rather than by a
            -- scan in every sweep: group g is entries group_start[g] .. group_start[g + 1] - 1,
            -- and block b's groups are block_group_start[b] .. block_group_start[b + 1] - 1.
            group_start := ARRAY(SELECT e.k::integer
                                   FROM (SELECT u.k, u.att, lag(u.att) OVER (ORDER BY u.k) AS previous
                                           FROM unnest(entry_att) WITH ORDINALITY AS u (att, k)) AS e
                                  WHERE e.previous IS DISTINCT FROM e.att
                                     OR e.k IN (SELECT bs FROM unnest(block_entry_start) AS bs)
                                  ORDER BY e.k)
                           || (cardinality(entry_att) + 1);
            block_group_start := ARRAY(SELECT gs.n::integer FROM unnest(group_start) WITH ORDINALITY AS gs (k, n)
                                        WHERE gs.k IN (SELECT bs FROM unnest(block_entry_start) AS bs)
                                        ORDER BY gs.n);

            theta := array_fill(0.0::double precision, ARRAY[p]);
            variance := array_fill(0.0::double precision, ARRAY[p]);
            eta_of := array_fill(0.0::double precision, ARRAY[n_attempts]);
            -- Sweeps move every block once; after the last (settled, or effects.max_sweeps), one
            -- more pass at the final estimates takes each block's variances.
            converged := false;
            final_pass := false;
            iterations_used := 0;
            LOOP
                change := 0;
                FOR b IN 1 .. n_rules LOOP
                    nb := block_col_start[b + 1] - block_col_start[b];
                    info := array_fill(0.0::double precision, ARRAY[nb * nb]);
                    score := array_fill(0.0::double precision, ARRAY[nb]);
                    FOR grp IN block_group_start[b] .. block_group_start[b + 1] - 1 LOOP
                        q := group_start[grp];
                        m := group_start[grp + 1];
                        i := entry_att[q];
                        prob := 1 / (1 + exp(-least(greatest(eta_of[i], -30), 30)));
                        wgt := greatest(prob * (1 - prob), 1e-9);
                        work := targets[i] - prob;
                        -- The lower triangle only (an attempt's entries come in column order), which
                        -- is all _ridge_step and _ridge_solve read: half the products, one statement each.
                        FOR k IN q .. m - 1 LOOP
                            score[entry_local[k]] := score[entry_local[k]] + entry_value[k] * work;
                            FOR lk IN k .. m - 1 LOOP
                                info[(entry_local[lk] - 1) * nb + entry_local[k]] :=
                                    info[(entry_local[lk] - 1) * nb + entry_local[k]] + wgt * entry_value[lk] * entry_value[k];
                            END LOOP;
                        END LOOP;
                    END LOOP;
                    FOR lk IN 1 .. nb LOOP
                        col := block_cols[block_col_start[b] + lk - 1];
                        work := CASE WHEN col <= n_rules THEN intercept_penalty ELSE lambda END;
                        info[(lk - 1) * nb + lk] := info[(lk - 1) * nb + lk] + work;
                        score[lk] := score[lk] - work * theta[col];
                    END LOOP;
                    IF final_pass THEN
                        solved := ctxgraph._ridge_solve(info, score, nb);
                        FOR lk IN 1 .. nb LOOP
                            variance[block_cols[block_col_start[b] + lk - 1]] := solved.inverse_diagonal[lk];
                        END LOOP;
                        CONTINUE;
                    END IF;
                    -- The Newton step for the block; a step larger than 5 on the log-odds scale is
                    -- shortened (the first sweeps start far from the optimum).
                    step := ctxgraph._ridge_step(info, score, nb);
                    step_scale := 1;
                    FOR lk IN 1 .. nb LOOP
                        step_scale := least(step_scale, 5 / greatest(abs(step[lk]), 1e-12));
                    END LOOP;
                    FOR lk IN 1 .. nb LOOP
                        col := block_cols[block_col_start[b] + lk - 1];
                        theta[col] := theta[col] + step_scale * step[lk];
                        IF col > n_rules THEN
                            change := greatest(change, abs(step_scale * step[lk]));
                        END IF;
                    END LOOP;
                    FOR k IN block_entry_start[b] .. block_entry_start[b + 1] - 1 LOOP
                        eta_of[entry_att[k]] := eta_of[entry_att[k]] + entry_value[k] * step_scale * step[entry_local[k]];
                    END LOOP;
                END LOOP;
                EXIT WHEN final_pass;
                iterations_used := iterations_used + 1;
                converged := change < 1e-6;
                final_pass := converged OR iterations_used >= max_sweeps;
            END LOOP;
            IF NOT converged THEN
                RAISE NOTICE 'ctxgraph: a group of % tips and % rules did not settle in effects.max_sweeps (%) sweeps (last change %)',
                    cardinality(tips), n_rules, max_sweeps, change;
            END IF;
            UPDATE effect_fit AS f
               SET effect = theta[n_rules + o.ord], inverse_diagonal = variance[n_rules + o.ord],
                   component_tips = cardinality(tips), method = 'blockwise', iterations = iterations_used
              FROM unnest(tips) WITH ORDINALITY AS o (tip_id, ord)
             WHERE f.tip_id = o.tip_id;
            CONTINUE;
        END IF;

        -- Penalised maximum likelihood by iteratively reweighted least squares: each step solves
        -- (X' W X + P) theta = X' W zeta, with W = p (1 - p) and zeta the working response.
        theta := array_fill(0.0::double precision, ARRAY[p]);
        FOR iteration IN 1 .. max_iter LOOP
            info := array_fill(0.0::double precision, ARRAY[p * p]);
            score := array_fill(0.0::double precision, ARRAY[p]);
            FOR i IN 1 .. n_attempts LOOP
                eta := 0;
                FOR k IN row_start[i] .. row_start[i + 1] - 1 LOOP
                    eta := eta + col_value[k] * theta[col_index[k]];
                END LOOP;
                prob := 1 / (1 + exp(-least(greatest(eta, -30), 30)));
                wgt := greatest(prob * (1 - prob), 1e-9);
                work := wgt * eta + (targets[i] - prob);   -- w * zeta
                -- The lower triangle only, as in the blockwise fit (a row's entries come in column order).
                FOR k IN row_start[i] .. row_start[i + 1] - 1 LOOP
                    score[col_index[k]] := score[col_index[k]] + col_value[k] * work;
                    FOR m IN k .. row_start[i + 1] - 1 LOOP
                        info[(col_index[m] - 1) * p + col_index[k]] :=
                            info[(col_index[m] - 1) * p + col_index[k]] + wgt * col_value[m] * col_value[k];
                    END LOOP;
                END LOOP;
            END LOOP;
            FOR j IN 1 .. p LOOP
                info[(j - 1) * p + j] := info[(j - 1) * p + j] + CASE WHEN j <= n_rules THEN intercept_penalty ELSE lambda END;
            END LOOP;
            solved := ctxgraph._ridge_solve(info, score, p);
            iterations_used := iteration;
            -- Settled when no tip effect moves by more than 1e-6 (a rule that fails for everyone
            -- keeps lowering its own intercept, which changes nothing else).
            change := 0;
            FOR j IN n_rules + 1 .. p LOOP
                change := greatest(change, abs(solved.x[j] - theta[j]));
            END LOOP;
            theta := solved.x;
            EXIT WHEN change < 1e-6;
        END LOOP;

        UPDATE effect_fit AS f
           SET effect = theta[n_rules + o.ord], inverse_diagonal = solved.inverse_diagonal[n_rules + o.ord],
               component_tips = cardinality(tips), method = 'exact', iterations = iterations_used
          FROM unnest(tips) WITH ORDINALITY AS o (tip_id, ord)
         WHERE f.tip_id = o.tip_id;
    END LOOP;

    DELETE FROM ctxgraph.tip_effects AS e WHERE e.skill = refresh_tip_effects.skill;
    INSERT INTO ctxgraph.tip_effects (skill, tip_id, effect, std_error, lower_bound, upper_bound, attempts,
                                      followed_attempts, co_followed_tips, component_tips, method, fitted_at,
                                      as_of, parameters)
    SELECT refresh_tip_effects.skill, t.id, f.effect, sqrt(f.inverse_diagonal),
           f.effect - z * sqrt(f.inverse_diagonal), f.effect + z * sqrt(f.inverse_diagonal),
           coalesce(support.attempts, 0), coalesce(support.followed, 0), c.co_followed, f.component_tips,
           coalesce(f.method, 'no_evidence'), now(), refresh_tip_effects.as_of,
           jsonb_build_object('effects.ridge_lambda', lambda, 'effects.bound_z', z,
                              'effects.max_component_tips', max_columns, 'effects.max_iterations', max_iter,
                              'effects.max_sweeps', max_sweeps, 'iterations', f.iterations)
      FROM ctxgraph.tips AS t
      LEFT JOIN effect_columns AS c ON c.tip_id = t.id
      LEFT JOIN effect_fit AS f ON f.tip_id = c.representative
      -- Identical columns: a member's support is its representative's.
      LEFT JOIN (SELECT u.tip_id, count(*) AS attempts, sum(u.w) AS followed
                   FROM effect_units AS u GROUP BY u.tip_id) AS support ON support.tip_id = c.representative
     WHERE t.skill = refresh_tip_effects.skill
    -- Never a conflict at READ COMMITTED: the fits take turns and the DELETE saw the last one. At
    -- REPEATABLE READ a fit committed after this transaction's snapshot is invisible to the
    -- DELETE, and updating its rows fails with 40001, the error such a caller retries (a plain
    -- INSERT failed with 23505).
    ON CONFLICT (skill, tip_id) DO UPDATE
       SET (effect, std_error, lower_bound, upper_bound, attempts, followed_attempts, co_followed_tips,
            component_tips, method, fitted_at, as_of, parameters)
         = (excluded.effect, excluded.std_error, excluded.lower_bound, excluded.upper_bound, excluded.attempts,
            excluded.followed_attempts, excluded.co_followed_tips, excluded.component_tips, excluded.method,
            excluded.fitted_at, excluded.as_of, excluded.parameters);
    PERFORM ctxgraph._fit_tip_blame(refresh_tip_effects.skill, refresh_tip_effects.as_of);
    RETURN (SELECT count(*) FROM effect_columns);
END
$$;

COMMENT ON FUNCTION ctxgraph.refresh_tip_effects(text, timestamptz) IS
    'Refits ctxgraph.tip_effects for a skill from its scored retrievals up to as_of (penalised logistic regression of the attempt''s graded outcome on the follow weights of its tips, with rule intercepts, large groups blockwise; and the latent-class misleading_probability); returns the tips with evidence.';

COMMIT;
