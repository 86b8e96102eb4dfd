// What an outside client sees of trading, written only from docs/: the
// answers of order entry carry the matcher's decision, a user reads its
// own positions and remaining withdrawal limits over REST, and kafkajs
// reads every topic once the Snappy codec the docs name is registered
// (docs/topics.md "Compression").
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import kafkajs from 'kafkajs';
import SnappyCodec from 'kafkajs-snappy';

import { startStack, waitUntil } from './lib/devstack.mjs';
import { SELLER_KEY, login } from './lib/trading.mjs';

const { Kafka, logLevel, CompressionTypes, CompressionCodecs } = kafkajs;
CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec;

let stack;

before(async () => {
  stack = await startStack();
});

after(async () => {
  await stack?.stop();
});

async function call(method, path, token, body) {
  const r = await fetch(`${stack.rest}${path}`, {
    method, body: body && JSON.stringify(body),
    headers: { Authorization: `Bearer ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
  });
  const answer = await r.json();
  assert.equal(r.status, 200, `${method} ${path}: ${JSON.stringify(answer)}`);
  assert.equal(answer.success, true, `${method} ${path}: ${JSON.stringify(answer)}`);
  return answer.data;
}

test('order answers, own positions and limits over REST; every topic through kafkajs', { timeout: 240_000 }, async () => {
  try {
    await traderView();
  } catch (err) {
    console.log(`stack output (tail):\n${stack.output().slice(-4000)}`);
    throw err;
  }
});

async function traderView() {
  // The demo seller holds every whole block its validator proposes.
  const seller = await login(stack.rest, SELLER_KEY, 'client-e2e');
  const market = await waitUntil('an open whole-block market with time left', async () => {
    const { markets } = await (await fetch(`${stack.rest}/api/v1/p/wholeblock/markets`)).json().then((a) => a.data);
    const open = markets.filter((m) => m.status === 1 && m.maturityTime > Date.now() + 30_000);
    return open.sort((a, b) => b.slot - a.slot)[0];
  }, 120_000);
  const instrumentId = market.instrumentId;

  const held = await waitUntil('the seller\'s position in the market', async () => {
    const { positions } = await call('GET', `/api/v1/user/wholeblock/positions?instrumentId=${instrumentId}`, seller.token);
    return positions.find((p) => p.quantity === '1');
  });
  assert.equal(held.accountId, seller.accountId);
  assert.equal(held.slot, market.slot);
  assert.equal(held.available, '1');

  // The answer carries the matcher's decision: the offer rests.
  const { orders } = await call('POST', '/api/v1/wholeblock/order', seller.token,
    { accountId: seller.accountId, instrumentId, side: false, orderType: 2, quantity: '1', price: '0.9' });
  assert.equal(orders.length, 1);
  const offer = orders[0];
  assert.equal(offer.errorCode, null, JSON.stringify(offer));
  assert.equal(offer.status, 1, `the offer's answer, want it resting: ${JSON.stringify(offer)}`);

  const { items } = await call('POST', '/api/v1/wholeblock/cancel-order', seller.token,
    { accountId: seller.accountId, instrumentId, orderId: offer.orderId });
  assert.deepEqual(items.map((it) => [it.orderId, it.code, it.status]), [[offer.orderId, 1, 11]]);

  // A user who never withdrew reads its limits without naming a request.
  const { dailyWithdrawLimits } = await call('GET', '/api/v1/user/funding/withdraw/limits', seller.token);
  assert.ok(dailyWithdrawLimits.length > 0);
  for (const l of dailyWithdrawLimits) {
    assert.equal(l.remainingWithdrawLimit, l.dailyWithdrawLimit, JSON.stringify(l));
  }

  await readEveryTopic(offer.orderId);
}

// readEveryTopic reads every topic of the exchange with kafkajs, read
// committed, and checks that each record is an envelope whose type
// header names its type, until every topic that holds records was read
// and the offer's place command and decision were seen.
async function readEveryTopic(orderId) {
  const kafka = new Kafka({ clientId: 'client-e2e', brokers: [stack.kafka], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const names = (await admin.listTopics()).filter((t) => !t.startsWith('__'));
  const holding = [];
  for (const topic of names) {
    const offsets = await admin.fetchTopicOffsets(topic);
    if (offsets.some((o) => Number(o.high) > Number(o.low))) holding.push(topic);
  }
  await admin.disconnect();
  assert.ok(holding.includes('orders') && holding.includes('order-events'), `topics with records: ${holding}`);

  const consumer = kafka.consumer({ groupId: `client-e2e-${Date.now()}`, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topics: names, fromBeginning: true });
  const read = new Set();
  const seen = new Set();
  const problems = [];
  await consumer.run({
    eachMessage: async ({ topic, message }) => {
      read.add(topic);
      if (message.value === null) return; // a tombstone of a compacted topic
      let envelope;
      try {
        envelope = JSON.parse(message.value.toString());
      } catch (err) {
        problems.push(`${topic}: not JSON: ${err.message}`);
        return;
      }
      if (message.headers.type?.toString() !== envelope.type) {
        problems.push(`${topic}: type header ${message.headers.type} but envelope type ${envelope.type}`);
      }
      if (envelope.data?.orderId === orderId) seen.add(envelope.type);
    },
  });
  try {
    await waitUntil('kafkajs to read every topic that holds records', () =>
      holding.every((t) => read.has(t)) && seen.has('order.place') && seen.has('order.accepted') && seen.has('order.cancelled'), 60_000);
  } finally {
    await consumer.disconnect();
  }
  assert.deepEqual(problems, []);
}
