-- The double-entry ledger. Every movement of money is one journal entry
-- (one applied command) with balanced postings: per entry and token the
-- posted amounts sum to zero. account_balances stays the current balance
-- table and is updated in the same transaction as the postings; postings
-- on user accounts are the account transactions of the interface.

-- System accounts are accounts without a user. Their types are fixed:
--   101 chain custody: minus what the collateral contract holds for users
--       (a deposit credits the user and debits custody);
--   102 fees: withdrawal and trading fees earned by the exchange;
--   103 withdrawals in flight: debited from users, not yet paid on chain.
-- Only system balances may go below zero.
CREATE UNIQUE INDEX accounts_system_type ON accounts (type) WHERE user_id IS NULL;
INSERT INTO accounts (user_id, type, name) VALUES
    (NULL, 101, 'Chain custody'),
    (NULL, 102, 'Fees'),
    (NULL, 103, 'Withdrawals in flight');

ALTER TABLE account_balances ADD COLUMN system boolean NOT NULL DEFAULT false;
ALTER TABLE account_balances DROP CONSTRAINT account_balances_quantity_nonnegative;
ALTER TABLE account_balances DROP CONSTRAINT account_balances_locked_within_quantity;
ALTER TABLE account_balances
    ADD CONSTRAINT account_balances_quantity_nonnegative CHECK (system OR quantity >= 0),
    ADD CONSTRAINT account_balances_locked_within_quantity CHECK (locked >= 0 AND (system OR locked <= quantity));
INSERT INTO account_balances (account_id, token_id, system)
SELECT a.account_id, t.token_id, true FROM accounts a CROSS JOIN tokens t WHERE a.user_id IS NULL;

-- One entry per applied command; command_id is the envelope id, so a
-- command delivered twice is applied once. A command the settler refused
-- (status 'rejected') keeps its row, without postings, so it stays refused.
CREATE TABLE journal (
    entry_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    command_id text        NOT NULL UNIQUE,
    kind       text        NOT NULL,
    status     text        NOT NULL DEFAULT 'applied' CHECK (status IN ('applied', 'rejected')),
    reason     text        NOT NULL DEFAULT '',
    created    timestamptz NOT NULL DEFAULT now()
);

-- posting_id is the interface's trxId; type is the account transaction
-- type of decisions.md; balance is the account's quantity after it.
CREATE TABLE postings (
    posting_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    entry_id   bigint   NOT NULL REFERENCES journal,
    account_id bigint   NOT NULL REFERENCES accounts,
    token_id   integer  NOT NULL REFERENCES tokens,
    amount     numeric  NOT NULL CHECK (amount <> 0),
    type       smallint NOT NULL,
    balance    numeric  NOT NULL,
    created    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX postings_account ON postings (account_id, posting_id);
CREATE INDEX postings_entry ON postings (entry_id);

-- Consumer offsets of the settler, stored with the entries they produced:
-- next_offset is the next record to apply of (group, topic, partition).
CREATE TABLE consumer_offsets (
    consumer_group text    NOT NULL,
    topic          text    NOT NULL,
    partition      integer NOT NULL,
    next_offset    bigint  NOT NULL,
    PRIMARY KEY (consumer_group, topic, partition)
);

-- Commands accepted by ingress and not yet confirmed by Kafka. The row is
-- written in the transaction that reserves the funds and deleted once the
-- broker acknowledged the record; the relay republishes what is left.
CREATE TABLE outbox (
    outbox_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic      text        NOT NULL,
    key        bytea,
    value      bytea       NOT NULL,
    created    timestamptz NOT NULL DEFAULT now()
);

-- Transfer ids are the command ids of transfers ("transfer-<id>").
CREATE SEQUENCE transfer_ids;

-- Withdrawal requests. status (decisions.md): 0 accepted (funds reserved),
-- 1 debited, 2 submitted on chain, 10 confirmed, 104 failed on chain
-- (funds returned). Rejected items (101-103) are answered, not stored.
CREATE TABLE withdraw_requests (
    request_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id     bigint   NOT NULL REFERENCES users,
    account_id  bigint   NOT NULL REFERENCES accounts,
    token_id    integer  NOT NULL REFERENCES tokens,
    chain_id    bigint   NOT NULL,
    quantity    numeric  NOT NULL CHECK (quantity > 0),
    fee         numeric  NOT NULL CHECK (fee >= 0),
    to_address  text     NOT NULL CHECK (to_address ~ '^0x[0-9a-f]{40}$'),
    status      smallint NOT NULL DEFAULT 0,
    tx_hash     text,
    -- The signed payout transaction, kept before it is sent so that a
    -- restarted executor rebroadcasts it instead of paying twice.
    raw_tx      bytea,
    remark      text     NOT NULL DEFAULT '',
    create_date timestamptz NOT NULL DEFAULT now(),
    update_date timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX withdraw_requests_user ON withdraw_requests (user_id, request_id);
CREATE INDEX withdraw_requests_limit ON withdraw_requests (user_id, token_id, chain_id, create_date);
CREATE INDEX withdraw_requests_open ON withdraw_requests (status) WHERE status IN (1, 2);

-- Deposits credited from the collateral contract's Deposit events.
CREATE TABLE deposits (
    event_id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    command_id        text    NOT NULL UNIQUE,
    user_id           bigint  NOT NULL REFERENCES users,
    account_id        bigint  NOT NULL REFERENCES accounts,
    token_id          integer NOT NULL REFERENCES tokens,
    chain_id          bigint  NOT NULL,
    block_idx         bigint  NOT NULL,
    block_hash        text    NOT NULL,
    transaction_idx   bigint  NOT NULL,
    transaction_hash  text    NOT NULL,
    log_idx           integer NOT NULL,
    sender_address    text    NOT NULL,
    deposit_address   text    NOT NULL,
    quantity          numeric NOT NULL,
    status            smallint NOT NULL DEFAULT 10,
    create_date       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX deposits_user ON deposits (user_id, block_idx);

-- Where the chain watcher stands: the last block it processed, with its
-- hash so that a reorganisation below it is noticed.
CREATE TABLE chain_cursors (
    chain_id   bigint NOT NULL,
    contract   text   NOT NULL,
    last_block bigint NOT NULL,
    last_hash  text   NOT NULL,
    PRIMARY KEY (chain_id, contract)
);
