-- A refund whose recipient refuses its payout is FAILED with the reason:
-- a contract whose receive reverts, one that needs more gas than a payout
-- may spend, or a payout that reverted in its block. The liability stays
-- on record, unpaid, for an operator to settle another way; nothing pays
-- it again by itself.
ALTER TABLE orderflow_refunds DROP CONSTRAINT orderflow_refunds_status_check;
ALTER TABLE orderflow_refunds ADD CONSTRAINT orderflow_refunds_status_check
    CHECK (status IN ('PENDING', 'PAYING', 'PAID', 'CONFIRMED', 'FAILED'));
ALTER TABLE orderflow_refunds ADD COLUMN failure text NOT NULL DEFAULT '';
