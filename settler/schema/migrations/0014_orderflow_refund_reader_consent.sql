-- A refund reader is an offer until the reader accepts it with its own
-- key: no account becomes another's reader without agreeing. Readers named
-- before this migration never agreed, so their rows stay offers.
ALTER TABLE orderflow_refund_readers ADD COLUMN accepted_at timestamptz;
