-- Effects that name the same subject set share its rows: a bulk removal's notification names
-- exactly the 100,000 people it removes, and both sets were stored (issue 49: storing the rows
-- was most of a bulk dry_run). A JSON object, effect id → the effect whose rows it reads; NULL
-- when every effect has rows of its own, as every plan stored before has.
ALTER TABLE plans ADD COLUMN shared_subjects TEXT;
