-- Deploy ctxgraph:table_tip_effects to pg
-- requires: view_scored_retrievals
-- requires: table_group_roles
-- requires: privileges_functions

-- Per-tip effects that explain away co-followed neighbours. A tip's follow-weighted hit rate
-- credits it with every outcome it was followed in, so a helpful tip followed beside a misleading
-- one shares the failure, and an ignored neighbour of a helpful one shares the pass. Here each
-- attempt's graded outcome is modelled as its rule's own level plus the effects of the tips
-- followed in it:
--
--     credit(attempt) = alpha(rule) + sum over retrieved tips t of effect(t) * follow_weight(t, attempt) + noise
--
-- fitted by ridge regression: the rule intercepts are free (a rule that fails for everyone is the
-- rule's difficulty, not its tips' fault), the effects are shrunk towards zero with
-- effects.ridge_lambda (a tip seen in a handful of attempts keeps an effect near zero), and each
-- effect's bounds come from the ridge posterior, sigma^2 (G + lambda I)^-1 with G the Gram matrix
-- of follow weights demeaned within rule: two tips always followed together share one wide
-- interval rather than two confident halves. Tips whose follow weights are identical in every
-- attempt (always retrieved and followed together, as run 7's five crypto-policy tips were)
-- cannot be told apart by any data: they are fitted as one column and each carries the group's
-- effect, with co_followed_tips saying how many share it. Tips that never share a rule do not interact, so the
-- system is solved exactly (Cholesky) per connected group of tips; a group larger than
-- effects.max_component_tips falls back to each tip on its own (method 'diagonal': no explaining
-- away there, and it says so).
BEGIN;

INSERT INTO ctxgraph.parameters (name, value, description) VALUES
    ('effects.ridge_lambda',        1.0,   'Tip effects: ridge penalty; the prior standard deviation of an effect is the residual one over sqrt(lambda).'),
    ('effects.bound_z',             1.645, 'Tip effects: normal quantile of the effect bounds (two one-sided 95% bounds).'),
    ('effects.max_component_tips',  400,   'Tip effects: largest group of tips sharing rules solved exactly; larger groups use per-tip estimates.'),
    ('effects.harmful_below',       0.0,   'Tips harmful when followed: the effect''s upper bound lies below this.');

CREATE TABLE ctxgraph.tip_effects (
    skill             text NOT NULL,
    tip_id            bigint NOT NULL,
    effect            double precision,
    std_error         double precision,
    lower_bound       double precision,
    upper_bound       double precision,
    attempts          bigint NOT NULL,
    followed_attempts double precision NOT NULL,
    co_followed_tips  integer,
    component_tips    integer,
    method            text NOT NULL CHECK (method IN ('exact', 'diagonal', 'no_evidence')),
    fitted_at         timestamptz NOT NULL,
    as_of             timestamptz NOT NULL,
    parameters        jsonb NOT NULL,
    PRIMARY KEY (skill, tip_id),
    FOREIGN KEY (skill, tip_id) REFERENCES ctxgraph.tips (skill, id) ON DELETE CASCADE
);

COMMENT ON TABLE ctxgraph.tip_effects IS
    'Per-tip effect on the attempt''s graded outcome when followed, adjusted for co-followed tips and the rule''s difficulty (ridge regression with rule intercepts), with bounds and support; written by ctxgraph.refresh_tip_effects.';
COMMENT ON COLUMN ctxgraph.tip_effects.skill IS 'The skill.';
COMMENT ON COLUMN ctxgraph.tip_effects.tip_id IS 'The tip.';
COMMENT ON COLUMN ctxgraph.tip_effects.effect IS 'Change in the attempt''s graded outcome when the tip is followed (follow weight 1), others held fixed; NULL without evidence.';
COMMENT ON COLUMN ctxgraph.tip_effects.std_error IS 'Posterior standard deviation of the effect.';
COMMENT ON COLUMN ctxgraph.tip_effects.lower_bound IS 'effect - effects.bound_z * std_error.';
COMMENT ON COLUMN ctxgraph.tip_effects.upper_bound IS 'effect + effects.bound_z * std_error: below effects.harmful_below, the tip is harmful when followed.';
COMMENT ON COLUMN ctxgraph.tip_effects.attempts IS 'Attempts with a known outcome that retrieved the tip.';
COMMENT ON COLUMN ctxgraph.tip_effects.followed_attempts IS 'Sum of the tip''s follow weights over those attempts.';
COMMENT ON COLUMN ctxgraph.tip_effects.co_followed_tips IS 'Tips (this one included) with identical follow weights in every attempt: one column of the fit, one shared effect.';
COMMENT ON COLUMN ctxgraph.tip_effects.component_tips IS 'How many tips were solved together with it (tips linked by shared rules).';
COMMENT ON COLUMN ctxgraph.tip_effects.method IS 'exact (solved with its group), diagonal (group too large: on its own), no_evidence.';
COMMENT ON COLUMN ctxgraph.tip_effects.fitted_at IS 'When the fit ran.';
COMMENT ON COLUMN ctxgraph.tip_effects.as_of IS 'The instant whose evidence (retrievals up to it) the fit used.';
COMMENT ON COLUMN ctxgraph.tip_effects.parameters IS 'The effects.* parameters the fit used, and its residual variance and degrees of freedom.';

DO $$ BEGIN PERFORM ctxgraph._grant('SELECT ON ctxgraph.tip_effects', '{ranker,analyst}'); END $$;

-- _ridge_solve: x = (A)^-1 b and diag(A^-1) for a symmetric positive definite n x n matrix A,
-- given row-major as a flat array, by Cholesky. Private: refresh_tip_effects' dense step.
CREATE FUNCTION ctxgraph._ridge_solve(a double precision[], b double precision[], n integer,
                                      OUT x double precision[], OUT inverse_diagonal double precision[])
LANGUAGE plpgsql IMMUTABLE STRICT
AS $$
DECLARE
    l double precision[] := array_fill(0.0::double precision, ARRAY[n * n]);
    y double precision[] := array_fill(0.0::double precision, ARRAY[n]);
    col double precision[];
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
            RAISE EXCEPTION 'ctxgraph: _ridge_solve needs a positive definite matrix' USING ERRCODE = 'data_exception';
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
    -- L y = b, then L^T x = y.
    FOR i IN 1 .. n LOOP
        s := b[i];
        FOR k IN 1 .. i - 1 LOOP
            s := s - l[(i - 1) * n + k] * y[k];
        END LOOP;
        y[i] := s / l[(i - 1) * n + i];
    END LOOP;
    x := array_fill(0.0::double precision, ARRAY[n]);
    FOR i IN REVERSE n .. 1 LOOP
        s := y[i];
        FOR k IN i + 1 .. n LOOP
            s := s - l[(k - 1) * n + i] * x[k];
        END LOOP;
        x[i] := s / l[(i - 1) * n + i];
    END LOOP;
    -- diag(A^-1) = column sums of squares of L^-1: forward-solve L c = e_j for each j.
    inverse_diagonal := array_fill(0.0::double precision, ARRAY[n]);
    FOR j IN 1 .. n LOOP
        col := array_fill(0.0::double precision, ARRAY[n]);
        FOR i IN j .. n LOOP
            s := CASE WHEN i = j THEN 1.0 ELSE 0.0 END;
            FOR k IN j .. i - 1 LOOP
                s := s - l[(i - 1) * n + k] * col[k];
            END LOOP;
            col[i] := s / l[(i - 1) * n + i];
            inverse_diagonal[j] := inverse_diagonal[j] + col[i] ^ 2;
        END LOOP;
    END LOOP;
END
$$;

COMMENT ON FUNCTION ctxgraph._ridge_solve(double precision[], double precision[], integer) IS
    'Private: solves A x = b for a symmetric positive definite A (row-major flat array) by Cholesky, with diag(A^-1).';

-- refresh_tip_effects: refits every tip effect of a skill from its scored retrievals up to as_of
-- and replaces the skill's rows of ctxgraph.tip_effects; returns the tips with evidence. The
-- scoring pass calls it at its end; call it by hand after changing parameters.
CREATE FUNCTION ctxgraph.refresh_tip_effects(skill text, as_of timestamptz DEFAULT now())
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    lambda     double precision := ctxgraph.param('effects.ridge_lambda');
    z          double precision := ctxgraph.param('effects.bound_z');
    max_tips   integer := ctxgraph.param('effects.max_component_tips')::integer;
    component  record;
    tips       bigint[];
    n          integer;
    gram       double precision[];
    solved     record;
    changed    integer;
    rss        double precision;
    dof        double precision;
    sigma2     double precision;
BEGIN
    PERFORM ctxgraph._require_skill(refresh_tip_effects.skill);
    IF refresh_tip_effects.as_of IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: refresh_tip_effects needs as_of' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- One fit per skill at a time: two passes ending together would otherwise both replace the
    -- skill's rows. The second waits, then refits on what the first committed.
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('ctxgraph.refresh_tip_effects'),
                                             pg_catalog.hashtext(refresh_tip_effects.skill));
    IF lambda <= 0 THEN
        RAISE EXCEPTION 'ctxgraph: effects.ridge_lambda must be positive, got %', lambda USING ERRCODE = 'invalid_parameter_value';
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
    -- Attempts, with their outcome demeaned within the rule (the rule intercepts, solved out).
    DROP TABLE IF EXISTS pg_temp.effect_attempts;
    CREATE TEMP TABLE effect_attempts ON COMMIT DROP AS
    SELECT a.attempt_key, a.rule_id, a.y, a.y - avg(a.y) OVER (PARTITION BY a.rule_id) AS y_centred,
           count(*) OVER (PARTITION BY a.rule_id) AS rule_attempts
      FROM (SELECT u.attempt_key, min(u.rule_id) AS rule_id, avg(u.y) AS y
              FROM effect_units AS u GROUP BY u.attempt_key) AS a;
    -- Per rule and tip: the sum of its follow weights (for demeaning the Gram matrix).
    DROP TABLE IF EXISTS pg_temp.effect_rule_tips;
    CREATE TEMP TABLE effect_rule_tips ON COMMIT DROP AS
    SELECT u.rule_id, u.tip_id, sum(u.w) AS w_sum, max(a.rule_attempts) AS rule_attempts
      FROM effect_units AS u JOIN effect_attempts AS a ON a.attempt_key = u.attempt_key
     GROUP BY u.rule_id, u.tip_id;

    -- Groups of tips linked by shared rules: label propagation to the smallest tip id.
    DROP TABLE IF EXISTS pg_temp.effect_groups;
    CREATE TEMP TABLE effect_groups ON COMMIT DROP AS
    SELECT DISTINCT rt.tip_id, rt.tip_id AS label FROM effect_rule_tips AS rt;
    LOOP
        WITH rule_label AS (
            SELECT rt.rule_id, min(g.label) AS label
              FROM effect_rule_tips AS rt JOIN effect_groups AS g ON g.tip_id = rt.tip_id
             GROUP BY rt.rule_id
        ),
        best AS (
            SELECT rt.tip_id, min(rl.label) AS label
              FROM effect_rule_tips AS rt JOIN rule_label AS rl ON rl.rule_id = rt.rule_id
             GROUP BY rt.tip_id
        )
        UPDATE effect_groups AS g SET label = b.label
          FROM best AS b
         WHERE b.tip_id = g.tip_id AND b.label < g.label;
        GET DIAGNOSTICS changed = ROW_COUNT;
        EXIT WHEN changed = 0;
    END LOOP;

    -- Within-rule Gram matrix of follow weights, G[s,t] = sum over rules of
    -- (sum of w_s * w_t over the rule's attempts) - w_sum_s * w_sum_t / attempts, plus lambda on
    -- the diagonal; and b[t] = sum of w_t * centred outcome.
    DROP TABLE IF EXISTS pg_temp.effect_gram;
    CREATE TEMP TABLE effect_gram ON COMMIT DROP AS
    SELECT pairs.s, pairs.t, sum(pairs.v) AS g
      FROM (SELECT u1.tip_id AS s, u2.tip_id AS t, u1.w * u2.w AS v
              FROM effect_units AS u1 JOIN effect_units AS u2 ON u2.attempt_key = u1.attempt_key
            UNION ALL
            SELECT r1.tip_id, r2.tip_id, -r1.w_sum * r2.w_sum / r1.rule_attempts
              FROM effect_rule_tips AS r1 JOIN effect_rule_tips AS r2 ON r2.rule_id = r1.rule_id) AS pairs
     GROUP BY pairs.s, pairs.t;
    DROP TABLE IF EXISTS pg_temp.effect_fit;
    CREATE TEMP TABLE effect_fit ON COMMIT DROP AS
    SELECT g.tip_id, g.label, sum(u.w * a.y_centred) AS b, NULL::double precision AS effect,
           NULL::double precision AS inverse_diagonal, NULL::integer AS component_tips, NULL::text AS method
      FROM effect_groups AS g
      JOIN effect_units AS u ON u.tip_id = g.tip_id
      JOIN effect_attempts AS a ON a.attempt_key = u.attempt_key
     GROUP BY g.tip_id, g.label;

    FOR component IN SELECT f.label, count(*)::integer AS size FROM effect_fit AS f GROUP BY f.label LOOP
        tips := ARRAY(SELECT f.tip_id FROM effect_fit AS f WHERE f.label = component.label ORDER BY f.tip_id);
        n := cardinality(tips);
        IF n <= max_tips THEN
            -- Dense (G + lambda I), row-major, in the order of tips.
            gram := ARRAY(
                SELECT coalesce(eg.g, 0) + CASE WHEN i.ord = j.ord THEN lambda ELSE 0 END
                  FROM unnest(tips) WITH ORDINALITY AS i (tip_id, ord)
                 CROSS JOIN unnest(tips) WITH ORDINALITY AS j (tip_id, ord)
                  LEFT JOIN effect_gram AS eg ON eg.s = i.tip_id AND eg.t = j.tip_id
                 ORDER BY i.ord, j.ord);
            SELECT * INTO solved
              FROM ctxgraph._ridge_solve(gram, ARRAY(SELECT f.b FROM unnest(tips) WITH ORDINALITY AS o (tip_id, ord)
                                                       JOIN effect_fit AS f ON f.tip_id = o.tip_id ORDER BY o.ord), n);
            UPDATE effect_fit AS f
               SET effect = solved.x[o.ord], inverse_diagonal = solved.inverse_diagonal[o.ord],
                   component_tips = n, method = 'exact'
              FROM unnest(tips) WITH ORDINALITY AS o (tip_id, ord)
             WHERE f.tip_id = o.tip_id;
        ELSE
            UPDATE effect_fit AS f
               SET effect = f.b / (eg.g + lambda), inverse_diagonal = 1 / (eg.g + lambda),
                   component_tips = n, method = 'diagonal'
              FROM effect_gram AS eg
             WHERE f.label = component.label AND eg.s = f.tip_id AND eg.t = f.tip_id;
        END IF;
    END LOOP;

    -- Residual variance of the fit, with the ridge fit's effective number of parameters.
    SELECT sum(r.residual ^ 2) INTO rss
      FROM (SELECT a.y_centred - (fa.fitted - avg(fa.fitted) OVER (PARTITION BY a.rule_id)) AS residual
              FROM effect_attempts AS a
              JOIN (SELECT u.attempt_key, sum(u.w * f.effect) AS fitted
                      FROM effect_units AS u JOIN effect_fit AS f ON f.tip_id = u.tip_id
                     GROUP BY u.attempt_key) AS fa ON fa.attempt_key = a.attempt_key) AS r;
    SELECT count(*) - count(DISTINCT a.rule_id) - coalesce((SELECT sum(1 - lambda * f.inverse_diagonal) FROM effect_fit AS f), 0)
      INTO dof
      FROM effect_attempts AS a;
    sigma2 := coalesce(rss, 0) / greatest(dof, 1);

    DELETE FROM ctxgraph.tip_effects AS e WHERE e.skill = refresh_tip_effects.skill;
    INSERT INTO ctxgraph.tip_effects (skill, tip_id, effect, std_error, lower_bound, upper_bound, attempts,
                                      followed_attempts, co_followed_tips, component_tips, method, fitted_at,
                                      as_of, parameters)
    SELECT refresh_tip_effects.skill, t.id, f.effect, sqrt(sigma2 * f.inverse_diagonal),
           f.effect - z * sqrt(sigma2 * f.inverse_diagonal), f.effect + z * sqrt(sigma2 * f.inverse_diagonal),
           coalesce(support.attempts, 0), coalesce(support.followed, 0), c.co_followed, f.component_tips,
           coalesce(f.method, 'no_evidence'), now(), refresh_tip_effects.as_of,
           jsonb_build_object('effects.ridge_lambda', lambda, 'effects.bound_z', z,
                              'effects.max_component_tips', max_tips, 'residual_variance', sigma2,
                              'degrees_of_freedom', dof)
      FROM ctxgraph.tips AS t
      LEFT JOIN effect_columns AS c ON c.tip_id = t.id
      LEFT JOIN effect_fit AS f ON f.tip_id = c.representative
      -- Identical columns: a member's support is its representative's.
      LEFT JOIN (SELECT u.tip_id, count(*) AS attempts, sum(u.w) AS followed
                   FROM effect_units AS u GROUP BY u.tip_id) AS support ON support.tip_id = c.representative
     WHERE t.skill = refresh_tip_effects.skill;
    RETURN (SELECT count(*) FROM effect_columns);
END
$$;

COMMENT ON FUNCTION ctxgraph.refresh_tip_effects(text, timestamptz) IS
    'Refits ctxgraph.tip_effects for a skill from its scored retrievals up to as_of (ridge regression of the attempt''s graded outcome on the follow weights of its tips, with rule intercepts); returns the tips with evidence.';

REVOKE ALL ON FUNCTION ctxgraph._ridge_solve(double precision[], double precision[], integer),
    ctxgraph.refresh_tip_effects(text, timestamptz) FROM PUBLIC;
DO $$ BEGIN PERFORM ctxgraph._grant('EXECUTE ON FUNCTION ctxgraph.refresh_tip_effects(text, timestamptz)', '{scorer,writer}'); END $$;

COMMIT;
