-- A posting moves one balance, so it references that balance row instead of
-- its account and token separately. The reference is at least as strict as
-- the two it replaces: account_balances itself references accounts and
-- tokens, and a balance that has postings can no longer be deleted. The
-- settler creates every balance row before it posts to it. One key check
-- per posting instead of two, and the balance rows are already locked by
-- the transaction that posts, so the check takes no new lock.
ALTER TABLE postings
    DROP CONSTRAINT postings_account_id_fkey,
    DROP CONSTRAINT postings_token_id_fkey,
    ADD CONSTRAINT postings_balance_fkey FOREIGN KEY (account_id, token_id) REFERENCES account_balances (account_id, token_id);
