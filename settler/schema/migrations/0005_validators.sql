-- Validators registered by users. A registration proves with a BLS
-- signature that the validator key signs for the user's address
-- (docs/validators.md); the slots the validator proposes are then sold by
-- that user, from its preconf trading account. A key belongs to at most
-- one user; deregistering deletes the row.
CREATE TABLE validators (
    pubkey          text     PRIMARY KEY CHECK (pubkey ~ '^0x[0-9a-f]{96}$'),
    user_id         bigint   NOT NULL REFERENCES users,
    -- The beacon chain's index of the validator when it was registered.
    validator_index bigint   NOT NULL CHECK (validator_index >= 0),
    -- 0 normal validator, 1 SSV validator (interface.md validatorType).
    validator_type  smallint NOT NULL DEFAULT 0 CHECK (validator_type IN (0, 1)),
    -- The registration signature, compressed G2, 0x hex.
    signature       text     NOT NULL CHECK (signature ~ '^0x[0-9a-f]{192}$'),
    registered_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX validators_user_id ON validators (user_id);
