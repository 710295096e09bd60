-- Deploy ctxgraph:table_tip_effects to pg
-- requires: view_scored_retrievals
-- requires: table_group_roles
-- requires: privileges_functions

-- Per-tip effects that explain away co-followed neighbours. A tip's follow-weighted hit rate
-- credits it with every outcome it was followed in, so a helpful tip followed beside a misleading
-- one shares the failure, and an ignored neighbour of a helpful one shares the pass. Here each
-- attempt's graded outcome, read as a success share in [0, 1] (a pass on try 1 counts 1.0, a late
-- pass its DEF-26 value, any failure 0), is modelled on the log-odds scale as its rule's own level
-- plus the effects of the tips followed in it:
--
--     logit E[success(attempt)] = alpha(rule) + sum over retrieved tips t of effect(t) * follow_weight(t, attempt)
--
-- A logistic rather than an additive model because one followed misleading tip sinks the whole
-- attempt, whatever else was followed: on the log-odds scale that is one large negative effect,
-- where an additive model spreads it over the attempt's other tips. Fitted by penalised maximum
-- likelihood (iteratively reweighted least squares): the rule intercepts are all but free (a rule
-- that fails for everyone is the rule's difficulty, not its tips' fault), the effects are shrunk
-- towards zero with effects.ridge_lambda (a tip seen in a handful of attempts keeps an effect near
-- zero), and each effect's bounds come from the inverse of the penalised information matrix: two
-- tips always followed together share one wide interval rather than two confident halves. Tips
-- whose follow weights are identical in every attempt (always retrieved and followed together, as
-- run 7's five crypto-policy tips were) cannot be told apart by any data: they are fitted as one
-- column and each carries the group's effect, with co_followed_tips saying how many share it.
-- Tips that never share a rule do not interact, so each group of tips linked by shared rules is
-- solved on its own, exactly (Cholesky); a group with more than effects.max_component_tips columns
-- is not fitted (method 'not_fitted', effect NULL) rather than approximated silently.
BEGIN;

INSERT INTO ctxgraph.parameters (name, value, description) VALUES
    ('effects.ridge_lambda',        0.5,   'Tip effects: ridge penalty on the log-odds effects (a normal prior with standard deviation 1 / sqrt(lambda)).'),
    ('effects.bound_z',             1.645, 'Tip effects: normal quantile of the effect bounds (two one-sided 95% bounds).'),
    ('effects.max_component_tips',  400,   'Tip effects: largest group (tips plus their rules) solved exactly; a larger group is left unfitted.'),
    ('effects.max_iterations',      25,    'Tip effects: most reweighting iterations per group (the fit stops earlier when the estimates settle).'),
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
    method            text NOT NULL CHECK (method IN ('exact', 'not_fitted', 'no_evidence')),
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
COMMENT ON COLUMN ctxgraph.tip_effects.effect IS 'Change in the log-odds of the attempt''s success when the tip is followed (follow weight 1), others held fixed; NULL without evidence.';
COMMENT ON COLUMN ctxgraph.tip_effects.std_error IS 'Standard error of the effect (penalised information matrix).';
COMMENT ON COLUMN ctxgraph.tip_effects.lower_bound IS 'effect - effects.bound_z * std_error.';
COMMENT ON COLUMN ctxgraph.tip_effects.upper_bound IS 'effect + effects.bound_z * std_error: below effects.harmful_below, the tip is harmful when followed.';
COMMENT ON COLUMN ctxgraph.tip_effects.attempts IS 'Attempts with a known outcome that retrieved the tip.';
COMMENT ON COLUMN ctxgraph.tip_effects.followed_attempts IS 'Sum of the tip''s follow weights over those attempts.';
COMMENT ON COLUMN ctxgraph.tip_effects.co_followed_tips IS 'Tips (this one included) with identical follow weights in every attempt: one column of the fit, one shared effect.';
COMMENT ON COLUMN ctxgraph.tip_effects.component_tips IS 'How many tips were solved together with it (tips linked by shared rules).';
COMMENT ON COLUMN ctxgraph.tip_effects.method IS 'exact (solved with its group), not_fitted (group larger than effects.max_component_tips), no_evidence.';
COMMENT ON COLUMN ctxgraph.tip_effects.fitted_at IS 'When the fit ran.';
COMMENT ON COLUMN ctxgraph.tip_effects.as_of IS 'The instant whose evidence (retrievals up to it) the fit used.';
COMMENT ON COLUMN ctxgraph.tip_effects.parameters IS 'The effects.* parameters the fit used, and the reweighting iterations its group took.';

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
-- scoring pass calls it at its end, evict_tips before it decides; call it by hand after changing
-- parameters.
CREATE FUNCTION ctxgraph.refresh_tip_effects(skill text, as_of timestamptz DEFAULT now())
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

REVOKE ALL ON FUNCTION ctxgraph._ridge_solve(double precision[], double precision[], integer),
    ctxgraph.refresh_tip_effects(text, timestamptz) FROM PUBLIC;
DO $$ BEGIN PERFORM ctxgraph._grant('EXECUTE ON FUNCTION ctxgraph.refresh_tip_effects(text, timestamptz)', '{scorer,writer}'); END $$;

COMMIT;
