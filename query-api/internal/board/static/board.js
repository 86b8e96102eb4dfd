// Market board: the current slot, a price chart of a market family, the
// open markets of both families and the chosen market's book and trades,
// live over the exchange WebSocket (docs/websocket.md); the chart's
// history comes from the candles read (docs/api.md "Candles"). Plain
// JavaScript, no build step.
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
    chart: { family: null, interval: "1m", candles: new Map(), seq: null, gen: 0 }, // candles by openTime
  };

  // CHART_SPAN is how many intervals the chart shows at most: the last
  // hours of each interval (a slot is 12 s on public chains).
  const CHART_SPAN = { slot: 300, "1m": 240, "5m": 288, "1h": 168 };
  const CHART_MIN_SPAN = 40; // intervals shown at least, so few candles stay wide


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
      if (state.chart.family) loadChart();
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
      case "candles":
        onCandles(msg.a, msg.P);
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
    if (!state.chart.family) chartShow(familyOf(id), state.chart.interval);
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

  // ---- chart ---------------------------------------------------------

  const SVG = "http://www.w3.org/2000/svg";
  const svgEl = (tag, attrs, text) => {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  };

  // chartShow switches the chart to a family and interval: the candles of
  // the last hours over REST, then the live ones of the candles channel.
  function chartShow(family, interval) {
    const c = state.chart;
    if (c.family === family && c.interval === interval) return;
    if (c.family) send({ op: "unsubscribe", args: [{ channel: "candles", marketType: c.family, interval: c.interval }] });
    c.family = family;
    c.interval = interval;
    for (const b of document.querySelectorAll("[data-chart-family]")) b.classList.toggle("on", b.dataset.chartFamily === family);
    for (const b of document.querySelectorAll("[data-chart-interval]")) b.classList.toggle("on", b.dataset.chartInterval === interval);
    loadChart();
  }

  function loadChart() {
    const c = state.chart;
    c.candles = new Map();
    c.seq = null;
    const gen = ++c.gen;
    const path = c.family === "wholeBlock" ? "wholeblock" : "inclusion-preconf";
    fetch("/api/v1/p/" + path + "/candles?interval=" + c.interval + "&limit=" + CHART_SPAN[c.interval])
      .then((r) => r.json())
      .then((body) => {
        if (gen !== c.gen || !body.success) return;
        for (const k of body.data.candles) mergeCandle(k);
        renderChart();
      })
      .catch(() => {});
    send({ op: "subscribe", args: [{ channel: "candles", marketType: c.family, interval: c.interval }] });
    renderChart();
  }

  // mergeCandle keeps the newer of two views of an interval: the one with
  // more trades (an interval only gains trades).
  function mergeCandle(k) {
    const cur = state.chart.candles.get(k.openTime);
    if (!cur || k.trades >= cur.trades) state.chart.candles.set(k.openTime, k);
  }

  function onCandles(action, p) {
    const c = state.chart;
    if (p.marketType !== c.family || p.interval !== c.interval) return;
    if (action === "snapshot") {
      c.seq = p.seq;
      for (const k of p.candles || []) mergeCandle(k);
    } else {
      if (c.seq === null) return; // before the snapshot
      if (p.seq !== c.seq + 1) {
        // A gap: subscribing again sends a fresh snapshot.
        c.seq = null;
        send({ op: "subscribe", args: [{ channel: "candles", marketType: c.family, interval: c.interval }] });
        return;
      }
      c.seq = p.seq;
      mergeCandle(p.candle);
    }
    renderChart();
  }

  function chartWidth() {
    const k = state.chart.candles.values().next().value;
    if (k) return k.closeTime - k.openTime;
    return state.chart.interval === "slot" && state.clock ? state.clock.slotLength : { "1m": 60e3, "5m": 300e3, "1h": 3600e3 }[state.chart.interval];
  }

  function fmtAxisPrice(p) {
    if (state.chart.family === "inclusionPreconf") return (Math.round(p * 1e9 * 1000) / 1000) + " gwei";
    return String(Number(p.toPrecision(9)));
  }

  function fmtAxisTime(t, span) {
    const d = new Date(t);
    const hm = String(d.getHours()).padStart(2, "0") + ":" + String(d.getMinutes()).padStart(2, "0");
    if (span <= 30 * 60e3) return hm + ":" + String(d.getSeconds()).padStart(2, "0");
    if (span > 36 * 3600e3) return (d.getMonth() + 1) + "/" + d.getDate() + " " + hm;
    return hm;
  }

  // niceStep rounds a price step up to 1, 2 or 5 times a power of ten, so
  // that the price axis reads in round numbers.
  function niceStep(raw) {
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    return [1, 2, 5, 10].map((m) => m * p).find((v) => v >= raw);
  }

  function renderChart() {
    const c = state.chart;
    const svg = $("#chart-svg");
    const box = $('[data-testid="chart"]');
    const W = Math.max(300, svg.clientWidth), H = Math.max(200, svg.clientHeight);
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    const w = chartWidth();
    const end = Math.floor(now() / w) * w + w;
    const all = [...c.candles.values()].sort((a, b) => a.openTime - b.openTime);
    const oldest = all.length ? all[0].openTime : end;
    const start = Math.min(end - CHART_MIN_SPAN * w, Math.max(oldest, end - CHART_SPAN[c.interval] * w));
    const shown = all.filter((k) => k.openTime >= start && k.openTime < end);
    box.dataset.candles = shown.length;
    box.dataset.trades = shown.reduce((n, k) => n + k.trades, 0);
    box.dataset.interval = c.interval;
    box.dataset.family = c.family || "";
    $("#no-candles").hidden = shown.length > 0;
    const fam = c.family === "wholeBlock" ? "whole block, ETH per block" : "inclusion preconf, gwei per gas";
    $("#chart-meta").textContent = fam + " · " + shown.length + " candles · " + box.dataset.trades + " trades";

    const L = 8, R = 96, T = 10, B = 24; // margins: price axis on the right, time axis below
    const pw = W - L - R, ph = H - T - B;
    const priceH = ph * 0.74, volTop = T + ph * 0.8, volH = ph * 0.2;
    const x = (t) => L + (t - start) / (end - start) * pw;
    let lo = Math.min(...shown.map((k) => Number(k.low))), hi = Math.max(...shown.map((k) => Number(k.high)));
    if (!shown.length) { lo = 0; hi = 1; }
    if (hi === lo) { hi += Math.abs(hi) * 0.05 || 1; lo -= Math.abs(lo) * 0.05 || 1; }
    const pad = (hi - lo) * 0.08;
    lo -= pad; hi += pad;
    const y = (p) => T + (hi - Number(p)) / (hi - lo) * priceH;
    const maxVol = Math.max(1e-18, ...shown.map((k) => Number(k.volume)));
    const parts = [];
    const step = niceStep((hi - lo) / 4);
    for (let p = Math.ceil(lo / step) * step; p <= hi; p += step) {
      const v = Number(p.toPrecision(12)); // no binary residue in the label
      parts.push(svgEl("line", { class: "grid-line", x1: L, x2: L + pw, y1: y(v), y2: y(v) }));
      parts.push(svgEl("text", { class: "axis", x: L + pw + 8, y: y(v) + 4 }, fmtAxisPrice(v)));
    }
    for (let i = 0; i <= 6; i++) {
      const t = start + (end - start) * i / 6;
      parts.push(svgEl("text", { class: "axis", x: x(t), y: H - 6, "text-anchor": i === 0 ? "start" : i === 6 ? "end" : "middle" }, fmtAxisTime(t, end - start)));
    }
    parts.push(svgEl("line", { class: "grid-line", x1: L, x2: L + pw, y1: volTop + volH, y2: volTop + volH }));
    const cw = Math.max(1, pw / ((end - start) / w) * 0.7);
    for (const k of shown) {
      const cx = x(k.openTime + w / 2);
      const up = Number(k.close) >= Number(k.open);
      const cls = up ? "up" : "down";
      const top = y(Math.max(Number(k.open), Number(k.close))), bot = y(Math.min(Number(k.open), Number(k.close)));
      const g = svgEl("g", { "data-testid": "candle", "data-open-time": k.openTime, "data-trades": k.trades });
      g.append(svgEl("line", { class: cls, x1: cx, x2: cx, y1: y(k.high), y2: y(k.low), "stroke-width": 1 }));
      g.append(svgEl("rect", { class: cls, x: cx - cw / 2, y: top, width: cw, height: Math.max(3, bot - top) }));
      const vh = Math.max(1, Number(k.volume) / maxVol * volH);
      g.append(svgEl("rect", { class: "vol", x: cx - cw / 2, y: volTop + volH - vh, width: cw, height: vh }));
      g.append(svgEl("title", {}, new Date(k.openTime).toLocaleTimeString([], { hour12: false }) + "  O " + k.open + "  H " + k.high +
        "  L " + k.low + "  C " + k.close + "  V " + k.volume + "  " + k.trades + " trades"));
      parts.push(g);
    }
    if (shown.length) {
      const last = shown[shown.length - 1];
      parts.push(svgEl("line", { class: "last", x1: L, x2: L + pw, y1: y(last.close), y2: y(last.close) }));
      parts.push(svgEl("text", { class: "last-label", x: L + pw + 8, y: y(last.close) - 6 }, fmtAxisPrice(Number(last.close))));
    }
    svg.replaceChildren(...parts);
  }

  for (const b of document.querySelectorAll("[data-chart-family]")) {
    b.addEventListener("click", () => chartShow(b.dataset.chartFamily, state.chart.interval || "1m"));
  }
  for (const b of document.querySelectorAll("[data-chart-interval]")) {
    b.addEventListener("click", () => chartShow(state.chart.family || "wholeBlock", b.dataset.chartInterval));
  }
  window.addEventListener("resize", renderChart);
  setInterval(renderChart, 1000); // the time axis moves on

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
