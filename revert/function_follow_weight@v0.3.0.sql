-- Revert ctxgraph:function_follow_weight from pg

BEGIN;

DROP FUNCTION ctxgraph.follow_weight(boolean, double precision);
DROP FUNCTION ctxgraph.tip_followed(boolean, double precision);
DELETE FROM ctxgraph.parameters WHERE name LIKE 'follow.%';

COMMIT;
