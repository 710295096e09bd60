-- Verify ctxgraph:skill_stig on pg

\set skill stig
\set grading graded
\ir skill_partitions.psql
