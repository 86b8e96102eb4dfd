-- Bundles on their way to builders outlive the relay that consumed them.
-- Each bundle remembers where its record sits in orderflow-bundles
-- (partition and offset) and the request builders get (eth_sendBundle's
-- parameter; a backrun's leading element is still the originator
-- transaction's hash). A relay assigned a partition of the topic takes
-- over that partition's bundles still RECEIVED: backruns waiting for their
-- transaction and bundles no builder has accepted yet.
ALTER TABLE orderflow_bundles
    ADD COLUMN source_partition int,
    ADD COLUMN source_offset    bigint,
    ADD COLUMN request          jsonb;

CREATE INDEX orderflow_bundles_unforwarded ON orderflow_bundles (source_partition, source_offset)
    WHERE status = 'RECEIVED';
