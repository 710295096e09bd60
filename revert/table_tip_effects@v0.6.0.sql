-- Revert ctxgraph:table_tip_effects from pg

-- Back to @v0.5.0: a group larger than effects.max_component_tips is left unfitted again. Rows the
-- blockwise fit wrote become what @v0.5.0 would have written for them ('not_fitted', no effect),
-- and refresh_tip_effects takes its @v0.5.0 body; misleading_probability, its fit and the blame.*
-- parameters are dropped.
BEGIN;

-- The blame fit goes with its column and parameters.
DROP FUNCTION ctxgraph._fit_tip_blame(text, timestamptz);
DROP FUNCTION ctxgraph._blame_mean_field(double precision, double precision, double precision, integer);
DROP FUNCTION ctxgraph._follow_chance(boolean, double precision, double precision, double precision, double precision, double precision, double precision);
DROP FUNCTION ctxgraph._aitken_share(double precision, double precision, double precision);
DROP FUNCTION ctxgraph._aitken_mixture(double precision[], double precision[], double precision[], double precision);
DROP FUNCTION ctxgraph._aitken_step(double precision, double precision);
ALTER TABLE ctxgraph.tip_effects DROP COLUMN misleading_probability;
DELETE FROM ctxgraph.parameters WHERE name LIKE 'blame.%';

UPDATE ctxgraph.tip_effects
   SET effect = NULL, std_error = NULL, lower_bound = NULL, upper_bound = NULL, method = 'not_fitted'
 WHERE method = 'blockwise';
ALTER TABLE ctxgraph.tip_effects DROP CONSTRAINT tip_effects_method_check;
ALTER TABLE ctxgraph.tip_effects ADD CONSTRAINT tip_effects_method_check
    CHECK (method IN ('exact', 'not_fitted', 'no_evidence'));
COMMENT ON COLUMN ctxgraph.tip_effects.method IS 'exact (solved with its group), not_fitted (group larger than effects.max_component_tips), no_evidence.';
COMMENT ON COLUMN ctxgraph.tip_effects.std_error IS 'Standard error of the effect (penalised information matrix).';
COMMENT ON COLUMN ctxgraph.tip_effects.parameters IS 'The effects.* parameters the fit used, and the reweighting iterations its group took.';

CREATE OR REPLACE FUNCTION ctxgraph.refresh_tip_effects(skill text, as_of timestamptz DEFAULT now())
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    lambda      double precision := ctxgraph.param('effects.ridge_lambda');
    z           double precision := ctxgraph.param('effects.bound_z');
    max_columns integer := ctxgraph.param('effects.max_component_tips')::integer;
    max_iter    integer := ctxgraph.param('effects.max_iterations')::integer;
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
BEGIN
    PERFORM ctxgraph._require_skill(refresh_tip_effects.skill);
    IF refresh_tip_effects.as_of IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: refresh_tip_effects needs as_of' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- One fit per skill at a time: two passes ending together would otherwise both replace the
    -- skill's rows. The second waits, then refits on what the first committed.
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('ctxgraph.refresh_tip_effects'),
                                             pg_catalog.hashtext(refresh_tip_effects.skill));
    IF lambda <= 0 OR max_iter < 1 THEN
        RAISE EXCEPTION 'ctxgraph: effects.ridge_lambda must be positive and effects.max_iterations at least 1'
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
        IF p > max_columns THEN
            UPDATE effect_fit AS f SET component_tips = cardinality(tips), method = 'not_fitted'
             WHERE f.label = component.label;
            RAISE NOTICE 'ctxgraph: % tips and % rules form one group, more than effects.max_component_tips (%): left unfitted',
                cardinality(tips), n_rules, max_columns;
            CONTINUE;
        END IF;
        -- The design, one sparse row per attempt of these rules (compressed rows: row_start[i] ..
        -- row_start[i + 1] - 1 index col_index and col_value): its rule's intercept column
        -- (1 .. n_rules) with value 1, then each of its tips' columns with the follow weight.
        CREATE TEMP TABLE IF NOT EXISTS effect_design (r integer, pos integer, col integer, val double precision)
            ON COMMIT DROP;
        TRUNCATE effect_design;
        INSERT INTO effect_design (r, pos, col, val)
        WITH att AS (
            SELECT a.attempt_key, a.rule_id, row_number() OVER (ORDER BY a.attempt_key)::integer AS r
              FROM effect_attempts AS a WHERE a.rule_id = ANY (rules)
        )
        SELECT att.r, 0, array_position(rules, att.rule_id), 1.0 FROM att
        UNION ALL
        SELECT att.r, 1, n_rules + array_position(tips, u.tip_id), u.w
          FROM att JOIN effect_units AS u ON u.attempt_key = att.attempt_key;
        targets := ARRAY(SELECT a.target FROM effect_attempts AS a WHERE a.rule_id = ANY (rules) ORDER BY a.attempt_key);
        n_attempts := cardinality(targets);
        SELECT array_agg(d.col ORDER BY d.r, d.pos, d.col), array_agg(d.val ORDER BY d.r, d.pos, d.col)
          INTO col_index, col_value
          FROM effect_design AS d;
        row_start := ARRAY(SELECT 1 + coalesce(sum(c.n) OVER (ORDER BY c.r ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)::integer
                             FROM (SELECT d.r, count(*) AS n FROM effect_design AS d GROUP BY d.r) AS c ORDER BY c.r)
                     || (cardinality(col_index) + 1);

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
                FOR k IN row_start[i] .. row_start[i + 1] - 1 LOOP
                    score[col_index[k]] := score[col_index[k]] + col_value[k] * work;
                    FOR m IN row_start[i] .. row_start[i + 1] - 1 LOOP
                        j := (col_index[k] - 1) * p + col_index[m];
                        info[j] := info[j] + wgt * col_value[k] * col_value[m];
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
                              'iterations', f.iterations)
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


DROP FUNCTION ctxgraph._ridge_step(double precision[], double precision[], integer);
-- IF EXISTS: a database deployed from main before this change gained the guard has none to drop,
-- and is brought to the release by reverting to @v0.5.0 and deploying again (README).
DROP FUNCTION IF EXISTS ctxgraph._refuse_foreign_temp_objects(text[]);
DELETE FROM ctxgraph.parameters WHERE name = 'effects.max_sweeps';

COMMIT;
