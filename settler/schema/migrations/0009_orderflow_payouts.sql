-- Private orderflow refunds that survive crashes and reorganisations.

-- The blocks the orderflow relay's chain watcher applied, the latest being
-- its cursor. Each block's hash is kept (the last 256 blocks), so a block
-- whose parent is not the stored hash reveals a reorganisation, and the
-- deepest stored block still canonical is where the watcher goes back to.
CREATE TABLE orderflow_chain_blocks (
    chain_id    bigint NOT NULL,
    number      bigint NOT NULL,
    hash        text   NOT NULL,
    parent_hash text   NOT NULL,
    PRIMARY KEY (chain_id, number)
);

-- A refund remembers the block it was learned from. Its payout is signed
-- and stored (raw transaction, sender, nonce, hash in payout_tx_hash) in
-- the same transaction that claims it (PAYING), and only then sent: a
-- relay that crashed sends the same transaction again, which can be mined
-- once at most.
ALTER TABLE orderflow_refunds
    ADD COLUMN block_hash   text NOT NULL DEFAULT '',
    ADD COLUMN payout_from  text NOT NULL DEFAULT '',
    ADD COLUMN payout_nonce bigint,
    ADD COLUMN payout_raw   bytea;

-- Two payouts in flight never share a nonce, whichever relay signed them.
CREATE UNIQUE INDEX orderflow_refunds_payout_nonce ON orderflow_refunds (payout_from, payout_nonce)
    WHERE status IN ('PAYING', 'PAID');
CREATE INDEX orderflow_refunds_payout_tx ON orderflow_refunds (payout_tx_hash) WHERE payout_tx_hash <> '';

-- A reorganisation undoes what was learned from the orphaned blocks.
CREATE INDEX orderflow_txs_block ON orderflow_txs (block_number) WHERE block_number IS NOT NULL;
CREATE INDEX orderflow_bundles_block ON orderflow_bundles (block_number) WHERE block_number IS NOT NULL;
