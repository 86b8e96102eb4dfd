-- Trading: orders with the funds they reserve, trades and positions.
--
-- Ingress inserts an order row (status 0, pending) together with the buy
-- reservation and the outbox row of its place command; the settler moves
-- it through the statuses of the matcher's order events and settles the
-- fills. An order event for an order ingress never wrote (a command that
-- reached the log another way) inserts the row from the event.

-- Order ids are handed out by ingress in blocks: one nextval reserves
-- the 1,000 ids [v, v + 1000), so ids are unique across ingress replicas
-- and increasing per replica without a round trip per order.
CREATE SEQUENCE order_ids INCREMENT BY 1000 START WITH 1000;

CREATE TABLE orders (
    order_id            bigint   PRIMARY KEY CHECK (order_id > 0),
    user_id             bigint   NOT NULL REFERENCES users,
    account_id          bigint   NOT NULL REFERENCES accounts,
    market_id           bigint   NOT NULL,
    instrument_id       text     NOT NULL,
    slot                bigint   NOT NULL,
    side                boolean  NOT NULL,          -- true = buy
    order_type          smallint NOT NULL,
    price               numeric,                    -- limit, or a market order's worst price
    quantity            numeric  NOT NULL CHECK (quantity > 0),
    fulfilled           numeric  NOT NULL DEFAULT 0,
    average_trade_price numeric,
    fees                numeric  NOT NULL DEFAULT 0,
    status              smallint NOT NULL DEFAULT 0,
    error_code          integer,
    reason              text     NOT NULL DEFAULT '',
    client_order_id     text     CHECK (char_length(client_order_id) <= 32),
    passive             boolean  NOT NULL DEFAULT false,
    source              smallint NOT NULL DEFAULT 1,
    -- Funds side of a buy: reserved is what ingress locked (price ×
    -- quantity × (1 + buyFeeRate)); spent is what settled fills took out
    -- of it (value plus buy fee). When the order is over and every fill
    -- it reported is settled, reserved − spent is unlocked and released
    -- is set, once.
    token_id            integer  NOT NULL DEFAULT 1 REFERENCES tokens,
    reserved            numeric  NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    spent               numeric  NOT NULL DEFAULT 0 CHECK (spent >= 0),
    released            boolean  NOT NULL DEFAULT false,
    -- Quantity of the fills of this order the settler has applied; an
    -- order is over for settlement when its status is final and
    -- settled_quantity = fulfilled.
    settled_quantity    numeric  NOT NULL DEFAULT 0,
    create_date         timestamptz NOT NULL DEFAULT now(),
    update_date         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX orders_instrument ON orders (instrument_id, order_id);
CREATE INDEX orders_account ON orders (account_id, order_id);
CREATE INDEX orders_live ON orders (instrument_id, order_id) WHERE status IN (0, 1, 13);

-- One row per fill (trade.executed); trade_id is the matcher's id and the
-- interface's trxId.
CREATE TABLE trades (
    trade_id          bigint   PRIMARY KEY,
    market_id         bigint   NOT NULL,
    instrument_id     text     NOT NULL,
    slot              bigint   NOT NULL,
    price             numeric  NOT NULL,
    quantity          numeric  NOT NULL,
    preconf_quantity  numeric,
    side              boolean  NOT NULL,            -- the taker's side
    primary_sale      boolean  NOT NULL,
    taker_order_id    bigint   NOT NULL,
    maker_order_id    bigint   NOT NULL,
    buyer_account_id  bigint   NOT NULL REFERENCES accounts,
    seller_account_id bigint   NOT NULL REFERENCES accounts,
    buyer_fee         numeric  NOT NULL,
    seller_fee        numeric  NOT NULL,
    executed_at       timestamptz NOT NULL,
    settled_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX trades_instrument ON trades (instrument_id, trade_id);
CREATE INDEX trades_buyer ON trades (buyer_account_id, trade_id);
CREATE INDEX trades_seller ON trades (seller_account_id, trade_id);

-- What an account holds in one market: whole-block positions are 0 or 1
-- block, inclusion-preconf positions are gas units. locked backs open sell
-- orders; cost is what the holder paid for what it holds (primary holdings
-- cost nothing), so average_price = cost / quantity of what was bought.
CREATE TABLE positions (
    account_id    bigint  NOT NULL REFERENCES accounts,
    instrument_id text    NOT NULL,
    market_id     bigint  NOT NULL,
    slot          bigint  NOT NULL,
    quantity      numeric NOT NULL DEFAULT 0 CHECK (quantity >= 0),
    locked        numeric NOT NULL DEFAULT 0 CHECK (locked >= 0 AND locked <= quantity),
    average_price numeric,
    expired       boolean NOT NULL DEFAULT false,
    update_date   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, instrument_id)
);
CREATE INDEX positions_instrument ON positions (instrument_id, account_id);
