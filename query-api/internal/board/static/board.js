// Market board: the current slot, the open markets of both families and
// the chosen market's book and trades, live over the exchange WebSocket
// (docs/websocket.md). Plain JavaScript, no build step.
"use strict";

(function () {
  const FAMILIES = ["wholeBlock", "inclusionPreconf"];
  const STATUS = { 1: "open", 2: "closed", 3: "submission closed", 4: "finalized" };
  const MAX_TRADES = 30;
  const MAX_LEVELS = 12;

  const state = {
    ws: null,
    backoff: 500,
    markets: new Map(), // instrumentId -> {family, market, ticker}
    selected: null,
    book: null, // {instrumentId, seq, bids: Map, asks: Map}
    trades: [],
    clock: null, // currentSlot answer plus the local time it arrived
  };

  const $ = (sel) => document.querySelector(sel);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };

  // ---- connection ----------------------------------------------------

  function connect() {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(proto + "//" + location.host + "/ws");
    state.ws = ws;
    setConn("connecting");
    ws.onopen = () => {
      state.backoff = 500;
      setConn("live");
      send({ op: "query", args: [{ queryType: "currentSlot" }] });
      send({ op: "query", args: FAMILIES.map((t) => ({ queryType: "markets", marketType: t })) });
      send({ op: "subscribe", args: FAMILIES.flatMap((t) => [
        { channel: "marketUpdate", marketType: t },
        { channel: "tickerUpdate", marketType: t },
      ]) });
      if (state.selected) watch(state.selected);
    };
    ws.onmessage = (ev) => {
      if (ev.data === "pong") return;
      let msg;
      try { msg = JSON.parse(ev.data); } catch (e) { return; }
      if (msg.e) onPush(msg);
      else if (msg.q) onAnswer(msg);
      else if (msg.event === "error") console.warn("ws error", msg.code, msg.msg);
    };
    ws.onclose = () => {
      setConn("down");
      setTimeout(connect, state.backoff);
      state.backoff = Math.min(state.backoff * 2, 10000);
    };
  }

  function send(msg) {
    if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(JSON.stringify(msg));
  }

  function setConn(s) {
    const c = $(".conn");
    c.dataset.state = s;
    c.querySelector(".text").textContent = s === "live" ? "live" : s === "down" ? "reconnecting" : "connecting";
  }

  setInterval(() => { if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send("ping"); }, 15000);

  // ---- messages ------------------------------------------------------

  function onAnswer(msg) {
    switch (msg.q) {
      case "currentSlot":
        state.clock = Object.assign({ at: Date.now() }, msg.P);
        tickClock();
        break;
      case "markets":
        for (const m of msg.P) upsertMarket(m, null);
        renderMarkets();
        break;
      case "recentTrades":
        if (msg.s === state.selected) {
          state.trades = msg.P.slice(0, MAX_TRADES);
          renderTrades(null);
        }
        break;
    }
  }

  function onPush(msg) {
    switch (msg.e) {
      case "marketUpdate":
        upsertMarket(msg.P, null);
        renderMarkets();
        if (msg.s === state.selected) renderDetail();
        break;
      case "tickerUpdate":
        upsertTicker(msg.P);
        renderMarkets();
        if (msg.s === state.selected) renderDetail();
        break;
      case "orderBookUpdate":
        if (msg.s !== state.selected) return;
        if (msg.a === "snapshot") loadBook(msg.P);
        else applyBook(msg.P);
        break;
      case "recentTrade":
        if (msg.s !== state.selected) return;
        state.trades.unshift(msg.P);
        state.trades.length = Math.min(state.trades.length, MAX_TRADES);
        renderTrades(msg.P.trxId);
        break;
    }
  }

  function familyOf(id) { return id.startsWith("ETH-WB-") ? "wholeBlock" : "inclusionPreconf"; }

  function upsertMarket(m) {
    const cur = state.markets.get(m.instrumentId) || { family: familyOf(m.instrumentId), ticker: null };
    cur.market = m;
    state.markets.set(m.instrumentId, cur);
  }

  function upsertTicker(t) {
    const cur = state.markets.get(t.instrumentId);
    if (!cur) return; // its marketUpdate comes first
    cur.ticker = t;
    cur.market.status = t.status;
  }

  // ---- book ----------------------------------------------------------

  function loadBook(b) {
    state.book = { instrumentId: b.instrumentId, seq: b.seq, bids: new Map(), asks: new Map(), fresh: new Set() };
    for (const l of b.bids || []) state.book.bids.set(l[0], l);
    for (const l of b.asks || []) state.book.asks.set(l[0], l);
    renderBook();
  }

  function applyBook(u) {
    const b = state.book;
    if (!b || b.instrumentId !== u.instrumentId) return;
    if (u.seq !== b.seq + 1) {
      // A gap: ask for a fresh snapshot (subscribing again sends one).
      send({ op: "subscribe", args: [{ channel: "orderBookUpdate", marketType: familyOf(u.instrumentId), instrumentId: u.instrumentId }] });
      return;
    }
    b.seq = u.seq;
    b.fresh = new Set();
    for (const [side, levels] of [[b.bids, u.bids || []], [b.asks, u.asks || []]]) {
      for (const l of levels) {
        if (Number(l[1]) === 0) side.delete(l[0]);
        else { side.set(l[0], l); b.fresh.add(l[0]); }
      }
    }
    renderBook();
  }

  // ---- selection -----------------------------------------------------

  function select(id) {
    if (state.selected === id) return;
    const prev = state.selected;
    state.selected = id;
    state.book = null;
    state.trades = [];
    if (prev) {
      send({ op: "unsubscribe", args: [
        { channel: "orderBookUpdate", marketType: familyOf(prev), instrumentId: prev },
        { channel: "recentTrade", marketType: familyOf(prev), instrumentId: prev },
      ] });
    }
    watch(id);
    renderMarkets();
    renderDetail();
    renderBook();
    renderTrades(null);
  }

  function watch(id) {
    const t = familyOf(id);
    send({ op: "subscribe", args: [
      { channel: "orderBookUpdate", marketType: t, instrumentId: id },
      { channel: "recentTrade", marketType: t, instrumentId: id },
    ] });
    send({ op: "query", args: [{ queryType: "recentTrades", instrumentId: id, limit: MAX_TRADES }] });
  }

  // ---- rendering -----------------------------------------------------

  function fmtPrice(id, p) {
    if (p === null || p === undefined || p === "") return "—";
    if (familyOf(id) === "inclusionPreconf") {
      const gwei = Number(p) * 1e9;
      return p + " (" + (Math.round(gwei * 1000) / 1000) + " gwei)";
    }
    return p;
  }

  function fmtShortPrice(id, p) {
    if (p === null || p === undefined) return "—";
    if (familyOf(id) === "inclusionPreconf") return (Math.round(Number(p) * 1e9 * 1000) / 1000) + " gwei";
    return p;
  }

  function fmtCountdown(ms) {
    if (ms <= 0) return "closed";
    const s = Math.floor(ms / 1000);
    if (s < 60) return s + "s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + "m " + String(s % 60).padStart(2, "0") + "s";
    return Math.floor(m / 60) + "h " + String(m % 60).padStart(2, "0") + "m";
  }

  function now() {
    if (!state.clock) return Date.now();
    return state.clock.serverTime + (Date.now() - state.clock.at);
  }

  function renderMarkets() {
    let total = 0;
    for (const fam of FAMILIES) {
      const body = document.querySelector('tbody[data-family="' + fam + '"]');
      const rows = [...state.markets.entries()]
        .filter(([, v]) => v.family === fam && v.market.status >= 1 && v.market.status <= 3)
        .sort((a, b) => a[1].market.slot - b[1].market.slot);
      total += rows.length;
      document.querySelector('[data-count="' + fam + '"]').textContent = rows.length;
      body.replaceChildren(...rows.map(([id, v]) => marketRow(id, v)));
    }
    $("#no-markets").hidden = total > 0;
    if (!state.selected) {
      const first = [...state.markets.entries()].find(([, v]) => v.family === "wholeBlock" && v.market.status === 1)
        || [...state.markets.entries()].find(([, v]) => v.market.status === 1);
      if (first) select(first[0]);
    }
  }

  function marketRow(id, v) {
    const tr = el("tr");
    tr.setAttribute("data-testid", "market-row");
    tr.dataset.instrument = id;
    if (id === state.selected) tr.classList.add("selected");
    const t = v.ticker || {};
    const m = v.market;
    const status = el("span", "pill s" + m.status, STATUS[m.status] || m.status);
    const cells = [
      el("td", "", id),
      el("td"),
      el("td", "num", fmtShortPrice(id, t.price !== undefined ? t.price : m.price)),
      el("td", "num bidc", fmtShortPrice(id, t.bestBid)),
      el("td", "num askc", fmtShortPrice(id, t.bestAsk)),
      el("td", "num muted countdown", fmtCountdown(m.maturityTime - now())),
    ];
    cells[1].append(status);
    cells[5].dataset.maturity = m.maturityTime;
    tr.append(...cells);
    tr.addEventListener("click", () => select(id));
    return tr;
  }

  function renderDetail() {
    const id = state.selected;
    $('[data-testid="selected-instrument"]').textContent = id || "Choose a market";
    const v = id && state.markets.get(id);
    if (!v) return;
    const m = v.market, t = v.ticker || {};
    const fam = v.family === "wholeBlock" ? "Whole block" : "Inclusion preconf";
    $("#detail-meta").textContent = fam + " · slot " + m.slot + " · " + (STATUS[m.status] || m.status) +
      " · price step " + m.priceStep + (m.quantityStep ? " · quantity step " + m.quantityStep + " gas" : "") +
      " · available preconf " + Number(m.availablePreconf).toLocaleString() + " gas";
    $('[data-testid="stat-last"]').textContent = fmtShortPrice(id, t.price !== undefined ? t.price : m.price);
    $("#stat-mid").textContent = fmtShortPrice(id, t.midPrice !== undefined ? t.midPrice : m.midPrice);
    $("#stat-volume").textContent = t.volume !== undefined ? Number(t.volume).toLocaleString() : "—";
    $("#stat-trades").textContent = t.trades !== undefined ? t.trades : "—";
  }

  function renderBook() {
    const b = state.book;
    const asks = $("#asks"), bids = $("#bids");
    if (!b) {
      asks.replaceChildren(); bids.replaceChildren();
      $("#spread").textContent = "—"; $("#book-seq").textContent = "";
      return;
    }
    const byPrice = (dir) => (x, y) => dir * (Number(x[0]) - Number(y[0]));
    const a = [...b.asks.values()].sort(byPrice(1)).slice(0, MAX_LEVELS);
    const d = [...b.bids.values()].sort(byPrice(-1)).slice(0, MAX_LEVELS);
    const max = Math.max(1, ...a.map((l) => Number(l[1])), ...d.map((l) => Number(l[1])));
    asks.replaceChildren(...a.map((l) => level(l, max, "ask-level", b)));
    bids.replaceChildren(...d.map((l) => level(l, max, "bid-level", b)));
    $("#book-seq").textContent = "seq " + b.seq;
    if (a.length && d.length) {
      const spread = Number(a[0][0]) - Number(d[0][0]);
      $("#spread").textContent = "spread " + fmtShortPrice(b.instrumentId, String(Math.max(0, spread)));
    } else {
      $("#spread").textContent = a.length || d.length ? "one-sided book" : "empty book";
    }
  }

  function level(l, max, testid, b) {
    const row = el("div", "lvl");
    row.setAttribute("data-testid", testid);
    if (b.fresh && b.fresh.has(l[0])) row.classList.add("fresh");
    const bar = el("div", "bar");
    bar.style.width = (100 * Number(l[1]) / max).toFixed(1) + "%";
    row.append(bar, el("span", "p", fmtShortPrice(b.instrumentId, l[0])), el("span", "num", l[1]), el("span", "num muted", String(l[2])));
    return row;
  }

  function renderTrades(freshId) {
    const list = $("#trades");
    const id = state.selected;
    list.replaceChildren(...state.trades.map((t) => {
      const row = el("div", "trade " + (t.side ? "buy" : "sell"));
      row.setAttribute("data-testid", "trade-row");
      if (t.trxId === freshId) row.classList.add("fresh");
      const time = new Date(t.date).toLocaleTimeString([], { hour12: false });
      row.append(el("span", "muted", time), el("span", "p num", fmtShortPrice(id, t.price)), el("span", "num", t.quantity));
      return row;
    }));
    $("#no-trades").hidden = state.trades.length > 0;
  }

  // ---- clock ---------------------------------------------------------

  function tickClock() {
    const c = state.clock;
    if (c) {
      const t = now();
      const slot = Math.floor((t - c.genesisTime) / c.slotLength);
      const into = (t - c.genesisTime) % c.slotLength;
      $('[data-testid="current-slot"]').textContent = slot.toLocaleString("en-US");
      $("#slot-fill").style.width = (100 * into / c.slotLength).toFixed(1) + "%";
    }
    for (const cell of document.querySelectorAll("td.countdown")) {
      cell.textContent = fmtCountdown(Number(cell.dataset.maturity) - now());
    }
  }

  setInterval(tickClock, 200);
  setInterval(() => send({ op: "query", args: [{ queryType: "currentSlot" }] }), 60000);
  connect();
})();
