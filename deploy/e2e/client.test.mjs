// What an outside client meets at the edges, written from docs/ only:
// refusals carry an X-Request-ID and the documented body (docs/codes.md,
// docs/websocket.md, docs/orderflow.md), and a deposit's wei amount reads
// exactly as docs/api.md shows; order entry answers carry the matcher's
// decision, a user reads its own positions and remaining withdrawal limits
// over REST, and kafkajs reads every topic. ethers signs logins, API-key
// challenges and the deposit; Node's fetch and http are the HTTP clients.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { ethers } from 'ethers';

import kafkajs from 'kafkajs';
import SnappyCodec from 'kafkajs-snappy';

import { startStack, waitUntil } from './lib/devstack.mjs';
import { SELLER_KEY, login } from './lib/trading.mjs';

// kafkajs reads Snappy batches once the codec is registered (docs/topics.md
// "Compression").
const { Kafka, logLevel, CompressionTypes, CompressionCodecs } = kafkajs;
CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec;

// Dev key 1, which README's "Dev chain keys" gives to deposits.
const DEPOSITOR_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';

let stack;

before(async () => {
  // Order answers carry the matcher's decision when it comes within
  // ORDER_ANSWER_WAIT: the longest wait ingress allows, so that a loaded
  // machine's decision still makes it into the answer.
  stack = await startStack({ ORDER_ANSWER_WAIT: '5s' });
});

after(async () => {
  await stack?.stop();
});

const UPGRADE = { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13',
  'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==' };

// answer sends a request and returns its status, headers and JSON body.
async function answer(url, init = {}) {
  const r = await fetch(url, init);
  const text = await r.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    assert.fail(`${init.method ?? 'GET'} ${url}: HTTP ${r.status}, body is not JSON: ${text}`);
  }
  return { status: r.status, headers: r.headers, body };
}

// handshake sends GET url with headers over node:http (fetch refuses the
// Connection and Upgrade headers of a WebSocket handshake) and returns the
// refusal's status, headers and JSON body.
function handshake(url, headers) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers }, (res) => {
      let text = '';
      res.on('data', (b) => { text += b; });
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode, headers: new Headers(res.headers), body: JSON.parse(text) });
        } catch {
          reject(new Error(`GET ${url}: HTTP ${res.statusCode}, body is not JSON: ${text}`));
        }
      });
    });
    req.on('upgrade', (res, sock) => { sock.destroy(); reject(new Error(`GET ${url}: the socket opened`)); });
    req.on('error', reject);
  });
}

// searcherKey is a fresh wallet's orderflow API key (docs/orderflow.md "API keys").
async function searcherKey() {
  const wallet = ethers.Wallet.createRandom();
  const address = wallet.address.toLowerCase();
  const ch = await answer(`${stack.orderflow}/v1/auth/challenge?address=${address}`);
  assert.equal(ch.status, 200, JSON.stringify(ch.body));
  const { typedData, nonce } = ch.body.data;
  const signature = await wallet.signTypedData(typedData.domain, { data: typedData.types.data }, typedData.message);
  const v = await answer(`${stack.orderflow}/v1/auth/verify`, { method: 'POST',
    headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ address, nonce, signature }) });
  assert.equal(v.status, 200, JSON.stringify(v.body));
  return v.body.data.apiKey;
}

test('refused WebSocket upgrades answer the REST envelope with an X-Request-ID', async () => {
  for (const [name, headers, status, code] of [
    ['no upgrade', {}, 400, 1001],
    ['bad bearer', { ...UPGRADE, Authorization: 'Bearer not-a-token' }, 401, 1],
  ]) {
    const r = await handshake(`${stack.rest}/ws`, headers);
    assert.equal(r.status, status, `${name}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.success, false, name);
    assert.equal(r.body.code, code, name);
    assert.match(r.headers.get('content-type'), /^application\/json/, name);
    assert.ok(r.headers.get('x-request-id'), `${name}: no X-Request-ID`);
  }
  const mine = await fetch(`${stack.rest}/ws`, { headers: { 'X-Request-ID': 'client-ws-1' } });
  assert.equal(mine.headers.get('x-request-id'), 'client-ws-1');
});

test('the searcher socket refuses with a JSON-RPC error and an X-Request-ID', async () => {
  const key = await searcherKey();
  const unknown = `ofk_${'0'.repeat(64)}`;
  for (const [name, path, headers, status, code] of [
    ['unknown key', `/v1/${unknown}`, UPGRADE, 401, -32000],
    ['no key', '/v1', UPGRADE, 404, -32600],
    ['live key, no upgrade', `/v1/${key}`, {}, 400, -32600],
  ]) {
    const r = await handshake(`${stack.searcher}${path}`, headers);
    assert.equal(r.status, status, `${name}: ${JSON.stringify(r.body)}`);
    assert.equal(r.headers.get('content-type'), 'application/json', name);
    assert.ok(r.headers.get('x-request-id'), `${name}: no X-Request-ID`);
    assert.equal(r.body.jsonrpc, '2.0', name);
    assert.equal(r.body.id, null, name);
    assert.equal(r.body.error.code, code, `${name}: ${JSON.stringify(r.body)}`);
  }
});

test('an unknown originator path answers 404 whatever the body holds', async () => {
  for (const [name, body] of [['not JSON', '{'], ['not a request', '[1]'],
    ['a request', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: ['0x00'] })]]) {
    const r = await answer(`${stack.originator}/v2`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
    assert.equal(r.status, 404, `${name}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.code, -32600, name);
    assert.match(r.body.error.message, /use \/v1 or \/v1\/<API_KEY>/, name);
    assert.ok(r.headers.get('x-request-id'), `${name}: no X-Request-ID`);
  }
});

test("a deposit's q reads exactly with the parse docs/api.md shows", { timeout: 180_000 }, async () => {
  const provider = new ethers.JsonRpcProvider(stack.chainRPC, 1337, { staticNetwork: true });
  try {
    const wallet = new ethers.Wallet(DEPOSITOR_KEY, provider);
    const { token } = await login(stack.rest, DEPOSITOR_KEY, 'client-e2e');
    const { body: c } = await answer(`${stack.rest}/api/v1/p/funding/contractAddress`);
    const collateral = new ethers.Contract(c.data.contractAddress, ['function deposit() payable'], wallet);
    const wei = 10n ** 18n + 1n; // 1.000000000000000001 ETH: no double holds it
    await (await collateral.deposit({ value: wei })).wait();

    const text = await waitUntil('the deposit to be credited', async () => {
      const r = await fetch(`${stack.rest}/api/v1/user/funding/deposits?limit=1`, { headers: { Authorization: `Bearer ${token}` } });
      const t = await r.text();
      return JSON.parse(t).data?.deposits?.length === 1 && t;
    }, 120_000);
    assert.match(text, /"q":1000000000000000001[,}]/, 'q is a bare JSON integer');
    assert.notEqual(BigInt(JSON.parse(text).data.deposits[0].deposits[0].q), wei, 'JSON.parse alone keeps it exact');
    // The documented way.
    const body = JSON.parse(text.replace(/"q":(\d+)/g, '"q":"$1"'));
    assert.equal(BigInt(body.data.deposits[0].deposits[0].q), wei);
    assert.equal(body.data.deposits[0].senderAddress, wallet.address.toLowerCase());
  } finally {
    provider.destroy();
  }
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
