-- Events of private orderflow that the relay's chain watcher decided (a
-- transaction or bundle included, taken back or expired; a refund owed,
-- withdrawn, paid or confirmed), stored in the transaction that decided
-- them and deleted once Kafka acknowledged them. A watcher republishes
-- what a crash or a Kafka outage left, with the same envelope.
CREATE TABLE orderflow_outbox (
    outbox_id bigserial   PRIMARY KEY,
    topic     text        NOT NULL,
    key       text        NOT NULL,
    value     bytea       NOT NULL,
    created   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX orderflow_outbox_created ON orderflow_outbox (created, outbox_id);
