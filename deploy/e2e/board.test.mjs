// The market board (GET /) in a real browser: Debian's Chromium driven by
// playwright-core. The page must show the current slot and the open
// markets, then a trade made while it watches: the orders go to the
// `orders` topic the way ingress publishes them (kafkajs), the matcher
// trades them, and the page learns of it over the WebSocket only. Then
// trades in two more markets, each in a later slot, must appear as
// candles of the price chart, as many as the candles read answers. A
// screenshot is saved in the directory printed at the end.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { Kafka, logLevel } from 'kafkajs';
import { ethers } from 'ethers';

import { startStack, waitUntil } from './lib/devstack.mjs';
import { BUYER_KEY, SELLER_KEY, login, placeOnTopic } from './lib/trading.mjs';

const CHROMIUM_FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const outputDir = process.env.E2E_OUTPUT_DIR ??
  path.join(path.dirname(fileURLToPath(import.meta.url)), 'test-output');

let stack, context, profile, producer;

before(async () => {
  stack = await startStack();
  profile = await mkdtemp(path.join(os.tmpdir(), 'blockspace-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium', headless: true, args: ['--headless', ...CHROMIUM_FLAGS],
    viewport: { width: 1440, height: 900 },
  });
  const kafka = new Kafka({ clientId: 'board-e2e', brokers: [stack.kafka], logLevel: logLevel.NOTHING });
  producer = kafka.producer();
  await producer.connect();
});

after(async () => {
  await producer?.disconnect().catch(() => {});
  await context?.close().catch(() => {});
  if (profile) await rm(profile, { recursive: true, force: true });
  await stack?.stop();
});

test('the market board shows the slot, the markets, a trade as it happens and the price chart', async () => {
  try {
    await watchATrade();
  } catch (err) {
    console.log(`stack output (tail):\n${stack.output().slice(-4000)}`); // helps to tell why
    throw err;
  }
});

async function watchATrade() {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${stack.rest}/`);

  // The slot counter runs and whole-block markets are listed.
  const slotText = page.getByTestId('current-slot');
  // A fresh dev stack's genesis is its start, so slot 0 lasts one slot
  // length: wait for the counter to move past it.
  await page.waitForFunction(() => {
    const text = document.querySelector('[data-testid="current-slot"]').textContent;
    return /^\d[\d,]*$/.test(text) && Number(text.replaceAll(',', '')) > 0;
  }, null, { timeout: 30_000 });
  const slot = Number((await slotText.textContent()).replaceAll(',', ''));
  assert.ok(slot > 0, `current slot ${slot}`);
  await page.locator('tbody[data-family="wholeBlock"] [data-testid="market-row"]').first().waitFor({ timeout: 120_000 });
  await page.locator('tbody[data-family="inclusionPreconf"] [data-testid="market-row"]').first().waitFor({ timeout: 60_000 });
  assert.equal(await page.getByTestId('conn').getAttribute('data-state'), 'live');

  // Choose the whole-block market furthest from closing. The list grows
  // as slots open, so the row is found again by its instrument.
  const rows = page.locator('tbody[data-family="wholeBlock"] [data-testid="market-row"]');
  const instrument = await rows.last().getAttribute('data-instrument');
  const row = page.locator(`[data-testid="market-row"][data-instrument="${instrument}"]`);
  // click scrolls the row into view itself, and finds the row again when
  // the list re-renders under it (a market opening), where a separate
  // scroll could hold a row that was just replaced.
  await row.click();
  await page.waitForFunction((id) => document.querySelector('[data-testid="selected-instrument"]').textContent === id,
    instrument, { timeout: 60_000 });

  const [seller, buyer] = [await login(stack.rest, SELLER_KEY, 'board-e2e'), await login(stack.rest, BUYER_KEY, 'board-e2e')];
  // The settler pays for a fill from the buyer's trading account (orders
  // on the topic reserve nothing), so the buyer deposits first.
  await fund(BUYER_KEY, buyer, '5');
  const base = Date.now() * 1000;
  await placeOnTopic(producer, seller, instrument, false, '0.75', base + 1);
  const ask = page.locator('[data-testid="ask-level"]').first();
  await ask.waitFor({ timeout: 60_000 });
  assert.match(await ask.textContent(), /^0\.75/);

  await placeOnTopic(producer, buyer, instrument, true, '0.75', base + 2);
  const trade = page.getByTestId('trade-row').first();
  await trade.waitFor({ timeout: 60_000 });
  assert.match(await trade.textContent(), /0\.75\s*1$/);
  await page.waitForFunction(() => document.querySelector('[data-testid="stat-last"]').textContent === '0.75');
  assert.equal(await page.locator('[data-testid="ask-level"]').count(), 0, 'the sold block left the book');

  await chartShowsTradesInSlots(page, instrument, [seller, buyer], base);

  await mkdir(outputDir, { recursive: true });
  const shot = path.join(outputDir, 'market-board.png');
  await page.screenshot({ path: shot, fullPage: true });
  console.log(`market board screenshot: ${shot}`);
  assert.deepEqual(errors, []);
}

// chartShowsTradesInSlots trades one block in each of two more
// whole-block markets, each in a later slot than the trade before, shows
// the chart per slot and waits until it draws one candle per trade: the
// number of candles the candles read answers for those slots.
async function chartShowsTradesInSlots(page, first, [seller, buyer], base) {
  const instruments = await page.locator('tbody[data-family="wholeBlock"] [data-testid="market-row"]')
    .evaluateAll((rows) => rows.map((r) => r.dataset.instrument));
  const others = instruments.filter((id) => id !== first).slice(-2);
  assert.equal(others.length, 2, `whole-block markets listed: ${instruments}`);
  await page.locator('[data-chart-interval="slot"]').click();
  const chart = page.getByTestId('chart');
  await page.waitForFunction(() => document.querySelector('[data-testid="chart"]').dataset.trades === '1', null, { timeout: 30_000 });
  const prices = ['0.82', '0.68'];
  for (const [i, instrument] of others.entries()) {
    // A slot lasts 2 s in the dev stack: the next trade is in a later one.
    await page.waitForTimeout(2500);
    await placeOnTopic(producer, seller, instrument, false, prices[i], base + 10 + 2 * i);
    await placeOnTopic(producer, buyer, instrument, true, prices[i], base + 11 + 2 * i);
    await page.waitForFunction((n) => document.querySelector('[data-testid="chart"]').dataset.trades === String(n),
      i + 2, { timeout: 60_000 });
  }
  assert.equal(await chart.getAttribute('data-family'), 'wholeBlock');
  assert.equal(await chart.getAttribute('data-interval'), 'slot');
  assert.equal(await chart.getAttribute('data-candles'), '3', 'one candle per slot with a trade');
  assert.equal(await page.getByTestId('candle').count(), 3);
  const read = await (await fetch(`${stack.rest}/api/v1/p/wholeblock/candles?interval=slot&limit=300`)).json();
  assert.equal(read.success, true);
  assert.deepEqual(read.data.candles.map((k) => [k.trades, k.close]), [[1, '0.75'], [1, '0.82'], [1, '0.68']]);
  const drawn = await page.getByTestId('candle').evaluateAll((gs) => gs.map((g) => Number(g.dataset.openTime)));
  assert.deepEqual(drawn, read.data.candles.map((k) => k.openTime));
}

// fund deposits amount ETH from key's wallet on the dev chain and moves
// it to the trading account of who, waiting until the settler applied
// both.
async function fund(key, who, amount) {
  const provider = new ethers.JsonRpcProvider(stack.chainRPC, 1337, { staticNetwork: true });
  try {
    const c = await (await fetch(`${stack.rest}/api/v1/p/funding/contractAddress`)).json();
    const collateral = new ethers.Contract(c.data.contractAddress, ['function deposit() payable'], new ethers.Wallet(key, provider));
    await (await collateral.deposit({ value: ethers.parseEther(amount) })).wait();
  } finally {
    provider.destroy();
  }
  const auth = { Authorization: `Bearer ${who.token}` };
  const holding = async (type) => {
    const body = await (await fetch(`${stack.rest}/api/v1/user/accounts`, { headers: auth })).json();
    const account = body.data.accounts.find((a) => a.type === type);
    const eth = (account.tokens ?? []).find((tok) => tok.tokenId === 1);
    return { accountId: account.accountId, available: eth?.availableQuantity ?? '0' };
  };
  const current = await waitUntil('the deposit to be credited', async () => {
    const h = await holding(1);
    return h.available === amount && h;
  }, 120_000);
  const r = await fetch(`${stack.rest}/api/v1/user/account/transfer/token`, { method: 'POST', headers: { ...auth,
    'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ fromAccountId: current.accountId,
    toAccountId: who.accountId, tokenId: '1', quantity: amount }).toString() });
  assert.equal((await r.json()).success, true);
  await waitUntil('the transfer to be applied', async () => (await holding(2)).available === amount, 60_000);
}
