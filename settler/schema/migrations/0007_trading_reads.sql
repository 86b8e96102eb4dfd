-- Indexes of query-api's trading reads (docs/api.md "Orders, trades and
-- positions") that the indexes of 0006 do not serve.

-- A user's open orders (GET /api/v1/user/<family>/orders?onbook=true):
-- without it the read walks the account's whole order history in
-- orders_account to find the few live ones. Small, as live orders are.
CREATE INDEX orders_account_live ON orders (account_id, order_id) WHERE status IN (0, 1, 13);

-- Public positions of a family without an instrument
-- (GET /api/v1/p/<family>/positions), newest market first: read backwards
-- in index order (an incremental sort orders each market's holders)
-- instead of sorting every position ever held. market_id puts the family
-- in its range and the slot in order (decisions.md "Identifiers").
CREATE INDEX positions_market ON positions (market_id);
