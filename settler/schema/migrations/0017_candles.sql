-- Candles of a market family (GET /api/v1/p/<family>/candles, the
-- WebSocket's candles channel; docs/api.md "Candles") are computed from
-- the trades in their time window. A family's market ids are
-- base + slot with base 1 000 000 000 000 (inclusion preconf) or
-- 2 000 000 000 000 (whole block), so market_id / 10^12 names the family;
-- the index reads one family's trades of a window in time order, and its
-- included columns answer the read without visiting the table.
CREATE INDEX trades_family_time ON trades ((market_id / 1000000000000), executed_at)
    INCLUDE (trade_id, price, quantity);
