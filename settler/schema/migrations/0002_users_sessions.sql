-- Users, their accounts and token balances, and the login state: single-use
-- login nonces, sessions with their refresh credentials, and the public
-- keys that verify access tokens.

CREATE TABLE users (
    user_id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The wallet that logs in, lower-case hex.
    address             text     NOT NULL UNIQUE CHECK (address ~ '^0x[0-9a-f]{40}$'),
    status              smallint NOT NULL DEFAULT 1,
    user_type           smallint NOT NULL DEFAULT 1,
    user_class          smallint NOT NULL DEFAULT 1 REFERENCES fee_schedules (user_class),
    display_name        text     NOT NULL DEFAULT '' CHECK (char_length(display_name) <= 64),
    -- As the user wrote it (EIP-55 checksummed or lower-case); NULL until set.
    payout_address      text     CHECK (payout_address ~* '^0x[0-9a-f]{40}$'),
    collateral_per_slot numeric  NOT NULL DEFAULT 0 CHECK (collateral_per_slot BETWEEN 0 AND 100),
    onchain_payout      boolean  NOT NULL DEFAULT false,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- Account types: 1 current account, 2 preconf trading account. Accounts
-- without a user (user_id NULL) are reserved for the exchange's own system
-- accounts of the ledger.
CREATE TABLE accounts (
    account_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id     bigint   REFERENCES users,
    type        smallint NOT NULL CHECK (type > 0),
    name        text     NOT NULL,
    status      smallint NOT NULL DEFAULT 1,
    -- Last calculation of risk metrics (the interface's updateDate).
    update_date timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, type)
);

-- Balance of one token in one account. locked covers open buy orders,
-- transfers and withdrawals in flight; available = quantity - locked.
CREATE TABLE account_balances (
    account_id bigint  NOT NULL REFERENCES accounts,
    token_id   integer NOT NULL REFERENCES tokens,
    quantity   numeric NOT NULL DEFAULT 0,
    locked     numeric NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, token_id),
    CONSTRAINT account_balances_quantity_nonnegative CHECK (quantity >= 0),
    CONSTRAINT account_balances_locked_within_quantity CHECK (locked >= 0 AND locked <= quantity)
);

-- A login challenge: 4 random bytes, single use, valid for a few minutes.
-- typed_data is the exact EIP-712 document the wallet was asked to sign.
CREATE TABLE login_nonces (
    nonce_hash text        PRIMARY KEY CHECK (nonce_hash ~ '^0x[0-9a-f]{8}$'),
    address    text        NOT NULL CHECK (address ~ '^0x[0-9a-f]{40}$'),
    -- Display name asked for at login; given to the user if it is new.
    display_name text      NOT NULL DEFAULT '' CHECK (char_length(display_name) <= 64),
    typed_data text        NOT NULL,
    issued_at  timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX login_nonces_expires_at ON login_nonces (expires_at);

-- A session is one login of one user agent: the family of refresh
-- credentials rotated from it. Revoking the session ends every credential
-- of the family.
CREATE TABLE sessions (
    session_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id    bigint      NOT NULL REFERENCES users,
    user_agent text        NOT NULL,
    client_ip  text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz,
    -- Why it was revoked: logout, reuse (a rotated credential came back).
    revoke_reason text
);
CREATE INDEX sessions_user_id ON sessions (user_id);

-- Refresh credentials, stored only as SHA-256 hashes. A rotated credential
-- keeps its row (rotated_at set) so that its reuse is recognised as theft.
CREATE TABLE refresh_tokens (
    token_hash bytea       PRIMARY KEY CHECK (octet_length(token_hash) = 32),
    session_id bigint      NOT NULL REFERENCES sessions,
    issued_at  timestamptz NOT NULL DEFAULT now(),
    rotated_at timestamptz
);
CREATE INDEX refresh_tokens_session_id ON refresh_tokens (session_id);

-- Public keys that verify access tokens (ES256), by JWT kid. Each ingress
-- publishes its signing key at start; every verifier loads the keys whose
-- not_after is unset or in the future. Rotating: start ingress with the new
-- key, then set not_after of the old one to at least one access-token
-- lifetime after the last ingress stopped signing with it.
CREATE TABLE signing_keys (
    kid          text        PRIMARY KEY,
    algorithm    text        NOT NULL DEFAULT 'ES256' CHECK (algorithm = 'ES256'),
    public_key   text        NOT NULL, -- PEM, SubjectPublicKeyInfo
    published_at timestamptz NOT NULL DEFAULT now(),
    not_after    timestamptz
);
