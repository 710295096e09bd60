-- Deploy ctxgraph:table_scoring_state to pg
-- requires: def27_tip_followed
-- requires: table_tip_retrievals

-- The scoring pass's own state, kept beside the DEF-27 columns rather than in them:
--  * follow_verdicts caches every answer of the LLM judge by content, model and prompt, so the
--    same question is never asked twice (across passes and runs), a changed prompt is visible,
--    and a permanent failure (an unparseable verdict, which the same model and prompt would
--    repeat at temperature 0) is not asked again until the model or prompt changes;
--  * retrieval_scores records, per scored retrieval, each leg's status (why a column is NULL)
--    and the provenance of its values.
BEGIN;

CREATE TABLE ctxgraph.follow_verdicts (
    tip_sha256      text NOT NULL CHECK (tip_sha256 ~ '^[0-9a-f]{64}$'),
    script_sha256   text NOT NULL CHECK (script_sha256 ~ '^[0-9a-f]{64}$'),
    model           text NOT NULL,
    prompt_sha256   text NOT NULL CHECK (prompt_sha256 ~ '^[0-9a-f]{64}$'),
    followed        boolean,
    reasoning       text,
    error           text,
    response_format text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tip_sha256, script_sha256, model, prompt_sha256),
    CONSTRAINT follow_verdicts_answer_or_error CHECK ((followed IS NULL) <> (error IS NULL))
);

COMMENT ON TABLE ctxgraph.follow_verdicts IS
    'Cache of LLM judge answers keyed by tip text, script text, model and prompt (sha256): a question is never asked twice.';
COMMENT ON COLUMN ctxgraph.follow_verdicts.tip_sha256 IS 'sha256 of the tip text judged.';
COMMENT ON COLUMN ctxgraph.follow_verdicts.script_sha256 IS 'sha256 of the whole fix script judged.';
COMMENT ON COLUMN ctxgraph.follow_verdicts.model IS 'The judge model as the server named it.';
COMMENT ON COLUMN ctxgraph.follow_verdicts.prompt_sha256 IS 'sha256 of the prompt file (instructions and few-shot examples).';
COMMENT ON COLUMN ctxgraph.follow_verdicts.followed IS 'The verdict; NULL when the answer was a permanent failure.';
COMMENT ON COLUMN ctxgraph.follow_verdicts.reasoning IS 'The judge''s stated reasoning.';
COMMENT ON COLUMN ctxgraph.follow_verdicts.error IS 'Permanent failure code (e.g. unparseable); transient failures are never cached.';
COMMENT ON COLUMN ctxgraph.follow_verdicts.response_format IS 'Structured-output mode the server accepted: json_schema, json_object or none.';
COMMENT ON COLUMN ctxgraph.follow_verdicts.created_at IS 'When the judge answered.';

CREATE TABLE ctxgraph.retrieval_scores (
    skill          text NOT NULL,
    retrieval_id   bigint NOT NULL,
    llm_status     text NOT NULL,
    emb_status     text NOT NULL,
    judge_model    text,
    prompt_sha256  text,
    embed_model    text,
    embed_mode     text,
    script_sha256  text,
    scored_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (skill, retrieval_id),
    FOREIGN KEY (skill, retrieval_id) REFERENCES ctxgraph.tip_retrievals (skill, id) ON DELETE CASCADE
);

COMMENT ON TABLE ctxgraph.retrieval_scores IS
    'Per retrieval, the last scoring pass''s status of each leg (why a DEF-27 column is NULL) and the provenance of its values.';
COMMENT ON COLUMN ctxgraph.retrieval_scores.skill IS 'The skill.';
COMMENT ON COLUMN ctxgraph.retrieval_scores.retrieval_id IS 'The retrieval.';
COMMENT ON COLUMN ctxgraph.retrieval_scores.llm_status IS 'judged, or why tip_followed_llm is NULL (no_script, unparseable, http_error, timeout, judge_skipped, ...).';
COMMENT ON COLUMN ctxgraph.retrieval_scores.emb_status IS 'computed, or why tip_followed_emb is NULL (no_script, nan, embed_skipped, ...).';
COMMENT ON COLUMN ctxgraph.retrieval_scores.judge_model IS 'Judge model of the verdict.';
COMMENT ON COLUMN ctxgraph.retrieval_scores.prompt_sha256 IS 'Prompt of the verdict.';
COMMENT ON COLUMN ctxgraph.retrieval_scores.embed_model IS 'Embedding model of the cosine.';
COMMENT ON COLUMN ctxgraph.retrieval_scores.embed_mode IS 'How the script was compared: truncated, chunk_max or chunk_mean.';
COMMENT ON COLUMN ctxgraph.retrieval_scores.script_sha256 IS 'sha256 of the script the row was scored against.';
COMMENT ON COLUMN ctxgraph.retrieval_scores.scored_at IS 'When the pass wrote this row.';

GRANT SELECT, INSERT, UPDATE ON ctxgraph.follow_verdicts, ctxgraph.retrieval_scores TO ctxgraph_scorer;
GRANT SELECT ON ctxgraph.follow_verdicts, ctxgraph.retrieval_scores TO ctxgraph_analyst;

COMMIT;
