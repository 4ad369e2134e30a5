-- 0020_org_generation_index.sql - the refresher asks only for the
-- organizations whose generation moved past the one its index is whole at
-- (src/db/snapshot_source.c: `WHERE generation > $1`; doc/choices.md,
-- "Reading only the organizations that moved").
--
-- Without this index that read is a scan of one row per organization
-- (10,000 at 10,000 organizations) for a change that moved one or two; with
-- it, it reads those rows only. The cost is on the write side: an update of
-- config_org_generation.generation is no longer a HOT update (the indexed
-- column changes), one more index entry per organization a transaction
-- touches.
--
-- Invariant relied on (0007, 0018): a transaction that changes what
-- evaluation reads stamps every organization it touched, deleted ones
-- included (their row stays), with its own config_generation, and
-- generations are given in commit order (the row lock of config_generation
-- is held until commit), so a snapshot that sees generation G sees every
-- row at G or below and none above it.

CREATE INDEX config_org_generation_generation ON config_org_generation (generation);
