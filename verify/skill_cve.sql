-- Verify ctxgraph:skill_cve on pg

\set skill cve
\set grading binary
\ir skill_partitions.psql
