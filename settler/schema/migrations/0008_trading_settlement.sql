-- What the settler keeps, beyond the rows of 0006, to settle trading
-- exactly once whatever order orders (market.open), order-events and
-- fills reach it in (docs/operations.md "Trading settlement"), and the
-- account feed it publishes after each committed batch.

-- Value (price × quantity) of the order's settled fills, so that
-- average_trade_price = settled_value / settled_quantity stays exact as
-- fills add up.
ALTER TABLE orders ADD COLUMN settled_value numeric NOT NULL DEFAULT 0;

-- What the holder bought in the market and what it paid before fees (its
-- fills as the buyer): average_price = bought_value / bought_quantity.
ALTER TABLE positions
    ADD COLUMN bought_quantity numeric NOT NULL DEFAULT 0,
    ADD COLUMN bought_value    numeric NOT NULL DEFAULT 0;

-- The slots the settler has heard of. The seller and the preconf supply
-- come from the slot's first market.open with a known seller; opened_at is
-- the time of the slot's first market.status (the matcher reports a status
-- only for a market it opened, and opening the slot's first market issues
-- the slot); phase is the highest market status seen, closed_at the time
-- of the status that closed trading. The slot is issued, its seller's
-- positions created, once seller and opening are both known. A position's
-- update_date is the latest of its slot's opened_at and closed_at and the
-- times of its fills, whatever order they arrived in.
CREATE TABLE trading_slots (
    slot              bigint   PRIMARY KEY,
    seller_user_id    bigint,
    seller_account_id bigint,
    total_preconf     bigint   CHECK (total_preconf >= 0),
    phase             smallint NOT NULL DEFAULT 0,
    opened_at         timestamptz,
    closed_at         timestamptz,
    issued            boolean  NOT NULL DEFAULT false,
    CHECK (NOT issued OR (opened_at IS NOT NULL AND seller_account_id IS NOT NULL AND total_preconf IS NOT NULL))
);

-- Fills of a slot that is not issued yet (its market.open or first
-- market.status is still on its way): a fill moves positions the issue
-- creates. They are applied, in trade id order, in the transaction that
-- issues the slot. value is the record value (the envelope).
CREATE TABLE parked_fills (
    trade_id  bigint      PRIMARY KEY,
    slot      bigint      NOT NULL,
    value     bytea       NOT NULL,
    parked_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX parked_fills_slot ON parked_fills (slot, trade_id);

-- The account feed of committed batches not yet acknowledged by Kafka
-- (docs/topics.md "Account feed"). A row is written in the transaction of
-- its batch and deleted once every record is published; a row a crash
-- left is published again. version is taken after the batch locked
-- everything it changes, so a later state of a balance or position
-- always has a higher version. Postings are read back by entry id;
-- balances and positions are kept as published (payloads without their
-- version, which is the row's).
CREATE SEQUENCE account_feed_versions;
CREATE TABLE account_feed (
    version   bigint      PRIMARY KEY,
    entry_ids bigint[]    NOT NULL,
    balances  jsonb       NOT NULL,
    positions jsonb       NOT NULL,
    created   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX account_feed_created ON account_feed (created);
