// What an outside client meets at the edges, written from docs/ only:
// refusals carry an X-Request-ID and the documented body (docs/codes.md,
// docs/websocket.md, docs/orderflow.md), and a deposit's wei amount reads
// exactly as docs/api.md shows. ethers signs logins, API-key challenges
// and the deposit; Node's fetch and http are the HTTP clients.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { ethers } from 'ethers';

import { startStack, waitUntil } from './lib/devstack.mjs';

// Dev key 1, which README's "Dev chain keys" gives to deposits.
const DEPOSITOR_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';

let stack;

before(async () => {
  stack = await startStack();
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

// login signs the server's EIP-712 login message and returns the access
// token (docs/api.md "Login, sessions and users").
async function login(wallet) {
  const addr = wallet.address.toLowerCase();
  const form = (o) => ({ method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(o).toString() });
  const ch = await answer(`${stack.rest}/api/v1/user/login`, form({ addr }));
  assert.equal(ch.body.success, true, JSON.stringify(ch.body));
  const typed = JSON.parse(ch.body.data.eip712Message);
  const signature = await wallet.signTypedData(typed.domain, { data: typed.types.data }, typed.message);
  const v = await answer(`${stack.rest}/api/v1/user/login/verify`, form({ addr, nonceHash: ch.body.data.nonceHash, signature }));
  assert.equal(v.body.success, true, JSON.stringify(v.body));
  return v.body.data.accessToken.token;
}

test("a deposit's q reads exactly with the parse docs/api.md shows", { timeout: 180_000 }, async () => {
  const provider = new ethers.JsonRpcProvider(stack.chainRPC, 1337, { staticNetwork: true });
  try {
    const wallet = new ethers.Wallet(DEPOSITOR_KEY, provider);
    const token = await login(wallet);
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
