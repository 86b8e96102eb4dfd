-- The orderflow relay's chain watcher keeps its events in the outbox that
-- ingress keeps its commands in (same rows, same relay), so the table of
-- its own that migration 0012 created is not used.
DROP TABLE orderflow_outbox;
