-- Fewer foreign-key checks on the rows every trade writes, with the same
-- rules enforced:
--
-- A posting references its balance row, (account_id, token_id) of
-- account_balances, instead of the account and the token separately: one
-- key check a posting instead of two, on a row the same transaction has
-- already locked to move it. The balance row itself references the
-- account and the token, so nothing a posting could name before is
-- accepted now, and a posting can no longer name a balance that does not
-- exist.
ALTER TABLE postings
    DROP CONSTRAINT postings_account_id_fkey,
    DROP CONSTRAINT postings_token_id_fkey,
    ADD CONSTRAINT postings_balance_fkey FOREIGN KEY (account_id, token_id) REFERENCES account_balances;

-- An order references its account together with the account's user,
-- instead of the user and the account separately: one key check an order
-- instead of two, and the database now also holds that the account is
-- the user's, which ingress and the settler check before they write.
ALTER TABLE accounts ADD CONSTRAINT accounts_account_user UNIQUE (account_id, user_id);
ALTER TABLE orders
    DROP CONSTRAINT orders_user_id_fkey,
    DROP CONSTRAINT orders_account_id_fkey,
    ADD CONSTRAINT orders_account_user_fkey FOREIGN KEY (account_id, user_id) REFERENCES accounts (account_id, user_id);
