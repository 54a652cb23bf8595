-- An upload's preview and its execution sum the sizes of a project's documents, a few times a
-- call: from the index alone, not from a table row per document (issue 49: the sums came to
-- half of a SQLite invoke's time once a project held a few thousand documents).
DROP INDEX documents_by_project;
CREATE INDEX documents_by_project ON documents (project_id, size_bytes);
