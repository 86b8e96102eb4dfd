-- Reference data: networks, tokens, fee schedule and withdrawal limits.
-- Operators change these rows with SQL; the read API reloads them within
-- a few seconds (docs/operations.md).

CREATE TABLE networks (
    network_id          integer PRIMARY KEY,
    chain_id            bigint  NOT NULL UNIQUE CHECK (chain_id > 0),
    name                text    NOT NULL,
    enable              boolean NOT NULL DEFAULT true,
    visible             boolean NOT NULL DEFAULT true,
    -- Address deposits are sent to; set per deployment (config or SQL).
    collateral_contract text CHECK (collateral_contract ~ '^0x[0-9a-f]{40}$')
);

INSERT INTO networks (network_id, chain_id, name, enable, visible) VALUES
    (1, 1,       'Ethereum', true, true),
    (2, 560048,  'Hoodi',    true, true),
    (3, 1337,    'Dev',      true, false);

CREATE TABLE tokens (
    token_id                 integer PRIMARY KEY,
    code                     text     NOT NULL UNIQUE,
    name                     text     NOT NULL,
    token_address            text     NOT NULL CHECK (token_address ~ '^0x[0-9a-f]{40}$'),
    decimals                 smallint NOT NULL CHECK (decimals BETWEEN 0 AND 36),
    native_token             boolean  NOT NULL,
    -- Value of one token in ETH, the exchange's unit of account.
    price                    numeric  NOT NULL CHECK (price >= 0),
    token_type               smallint NOT NULL DEFAULT 1,
    value_type               smallint NOT NULL DEFAULT 1 CHECK (value_type IN (1, 2)),
    token_valuation_protocol smallint NOT NULL DEFAULT 0
);

INSERT INTO tokens (token_id, code, name, token_address, decimals, native_token, price)
VALUES (1, 'ETH', 'Ether', '0x0000000000000000000000000000000000000000', 18, true, 1);

-- Fee rates are fractions of trade value, per user class (1 regular, 2 VIP).
CREATE TABLE fee_schedules (
    user_class              smallint PRIMARY KEY,
    buy_fee_rate            numeric NOT NULL CHECK (buy_fee_rate >= 0 AND buy_fee_rate < 1),
    primary_sell_fee_rate   numeric NOT NULL CHECK (primary_sell_fee_rate >= 0 AND primary_sell_fee_rate < 1),
    secondary_sell_fee_rate numeric NOT NULL CHECK (secondary_sell_fee_rate >= 0 AND secondary_sell_fee_rate < 1)
);

INSERT INTO fee_schedules VALUES
    (1, 0.001,  0.02, 0.005),
    (2, 0.0005, 0.01, 0.0025);

-- Withdrawal fee and rolling-24h limit per token and chain.
CREATE TABLE withdraw_limits (
    token_id     integer NOT NULL REFERENCES tokens,
    chain_id     bigint  NOT NULL REFERENCES networks (chain_id),
    withdraw_fee numeric NOT NULL CHECK (withdraw_fee >= 0),
    daily_limit  numeric NOT NULL CHECK (daily_limit > 0),
    PRIMARY KEY (token_id, chain_id)
);

INSERT INTO withdraw_limits VALUES
    (1, 1,      0.001,  100),
    (1, 560048, 0.0001, 1000),
    (1, 1337,   0.0001, 1000);
