-- Private orderflow: accounts and their API keys, the challenges that issue
-- keys, and the read models of tracking and refunds that orderflow-relay
-- writes from the orderflow topics and query-api reads.

CREATE TABLE orderflow_accounts (
    address    text PRIMARY KEY CHECK (address ~ '^0x[0-9a-f]{40}$'),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- A refund-read subaccount: reader may read partner's refunds.
CREATE TABLE orderflow_refund_readers (
    partner    text NOT NULL REFERENCES orderflow_accounts,
    reader     text NOT NULL REFERENCES orderflow_accounts,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (reader, partner)
);

-- Keys are stored as SHA-256 of the key; the key itself is shown once.
CREATE TABLE orderflow_api_keys (
    key_hash   bytea PRIMARY KEY CHECK (octet_length(key_hash) = 32),
    address    text NOT NULL REFERENCES orderflow_accounts,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
-- One live key per account: verify rotates.
CREATE UNIQUE INDEX orderflow_api_keys_live ON orderflow_api_keys (address) WHERE revoked_at IS NULL;

CREATE TABLE orderflow_challenges (
    nonce      text PRIMARY KEY,
    address    text NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX orderflow_challenges_expiry ON orderflow_challenges (expires_at);

-- Originator transactions, one row per hash (the same transaction sent
-- twice is one row).
CREATE TABLE orderflow_txs (
    hash             text PRIMARY KEY,
    originator       text NOT NULL DEFAULT '',
    sender           text NOT NULL,
    raw              text NOT NULL,
    decoded          jsonb NOT NULL,
    method           text NOT NULL,
    refund_recipient text NOT NULL,
    refund_percent   int  NOT NULL CHECK (refund_percent BETWEEN 0 AND 99),
    -- The originator bundle it came in, if any.
    bundle_hash      text,
    status           text NOT NULL DEFAULT 'PENDING',
    block_number     bigint,
    block_hash       text,
    reason           text NOT NULL DEFAULT '',
    received_at      timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX orderflow_txs_pending ON orderflow_txs (received_at) WHERE status = 'PENDING';
CREATE INDEX orderflow_txs_originator ON orderflow_txs (originator, received_at);

-- Originator and searcher bundles. tx_hashes lists every element's hash in
-- order (a backrun's leading originator hash included); raws the signed
-- transactions sent to builders in the same order.
CREATE TABLE orderflow_bundles (
    bundle_hash         text PRIMARY KEY,
    kind                text NOT NULL CHECK (kind IN ('originator', 'searcher')),
    owner               text NOT NULL DEFAULT '',
    replacement_uuid    text NOT NULL DEFAULT '',
    backrun_of          text NOT NULL DEFAULT '',
    tx_hashes           text[] NOT NULL,
    status              text NOT NULL,
    builder_bundle_hash text NOT NULL DEFAULT '',
    builders            text[] NOT NULL DEFAULT '{}',
    block_number        bigint,
    reason              text NOT NULL DEFAULT '',
    received_at         timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX orderflow_bundles_group ON orderflow_bundles (owner, replacement_uuid) WHERE replacement_uuid <> '';
CREATE INDEX orderflow_bundles_open ON orderflow_bundles (received_at) WHERE status IN ('RECEIVED', 'FORWARDED');

-- Refund liabilities and payouts, amounts in wei.
CREATE TABLE orderflow_refunds (
    refund_id      text PRIMARY KEY,
    tx_hash        text NOT NULL,
    bundle_hash    text NOT NULL,
    originator     text NOT NULL DEFAULT '',
    recipient      text NOT NULL,
    percent        int NOT NULL CHECK (percent BETWEEN 1 AND 99),
    payment_wei    numeric NOT NULL CHECK (payment_wei >= 0),
    amount_wei     numeric NOT NULL CHECK (amount_wei >= 0),
    block_number   bigint NOT NULL,
    status         text NOT NULL CHECK (status IN ('PENDING', 'PAYING', 'PAID', 'CONFIRMED')),
    payout_tx_hash text NOT NULL DEFAULT '',
    payout_block   bigint,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX orderflow_refunds_originator ON orderflow_refunds (originator, created_at);
CREATE INDEX orderflow_refunds_open ON orderflow_refunds (status) WHERE status <> 'CONFIRMED';
