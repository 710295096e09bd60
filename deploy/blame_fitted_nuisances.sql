-- Deploy ctxgraph:blame_fitted_nuisances to pg
-- requires: table_tip_effects

-- The blame model is told two quantities an operator cannot know: how often the judge is right
-- (blame.judge_reliability) and how often following a misleading tip fails the attempt
-- (blame.misleading_failure). The attribution fit (ctxgraph.fit) can fit both from the skill's
-- own data instead, each drawn towards the configured value as towards a prior: the judge's
-- reliability from how often it agrees with the cosine's reading of the same scripts, the failure
-- rate from the attempts that follow the tips it blames. Each fitted value is reported in the
-- fit's parameters (fitted_judge_reliability, fitted_misleading_failure).
BEGIN;

INSERT INTO ctxgraph.parameters (name, value, description) VALUES
    ('blame.fit_judge_reliability', 1, 'Blame: 1 to fit the judge''s reliability per skill from its agreement with the cosine (blame.judge_reliability weighing as 100 verdicts), 0 to take blame.judge_reliability as it is.'),
    ('blame.fit_misleading_failure', 1, 'Blame: 1 to fit the chance that following a misleading tip fails the attempt per skill from the attempts that follow blamed tips (blame.misleading_failure weighing as 20 such attempts), 0 to take blame.misleading_failure as it is.');

COMMIT;
