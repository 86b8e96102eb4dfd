// The private-orderflow flow end to end, with clients this project did
// not write: ethers signs the API-key challenges (EIP-712) and the
// transactions, the `ws` package is the searcher's WebSocket client. The
// dev chain makes blocks only when the test asks (evm_mine), so every step
// waits for a state, never for time. orderflow.test.mjs runs it on the dev
// stack, orderflow-cluster.test.mjs on the production shape: two files,
// so that the test runner can run them at the same time.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ethers } from 'ethers';
import WebSocket from 'ws';

import { waitUntil } from './devstack.mjs';

// Well-known public dev keys, funded on the dev chain (deploy/devchain).
const ORIGINATOR_KEY = '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6';
const SEARCHER_KEY = '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926e';
const GWEI = 1_000_000_000n;

async function post(url, body, headers = {}) {
  const r = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

async function get(url) {
  const r = await fetch(url);
  return { status: r.status, body: await r.json() };
}

const rpc = (method, ...params) => ({ jsonrpc: '2.0', id: 1, method, params });

// apiKey answers the orderflow challenge of stack with an EIP-712
// signature.
async function apiKey(stack, wallet) {
  const address = wallet.address.toLowerCase();
  const ch = await get(`${stack.orderflow}/v1/auth/challenge?address=${address}`);
  assert.equal(ch.status, 200, JSON.stringify(ch.body));
  const { typedData, nonce } = ch.body.data;
  assert.equal(typedData.primaryType, 'data');
  const signature = await wallet.signTypedData(typedData.domain, { data: typedData.types.data }, typedData.message);
  const v = await post(`${stack.orderflow}/v1/auth/verify`, { address, nonce, signature });
  assert.equal(v.status, 200, JSON.stringify(v.body));
  assert.equal(v.body.data.account.address, address);
  assert.match(v.body.data.apiKey, /^ofk_[0-9a-f]{64}$/);
  return v.body.data.apiKey;
}

// socket opens a WebSocket and hands out its messages in order.
async function socket(url) {
  const ws = new WebSocket(url);
  const queue = [];
  const waiters = [];
  ws.on('message', (data) => {
    const msg = JSON.parse(data.toString());
    const w = waiters.shift();
    if (w) w(msg); else queue.push(msg);
  });
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  return {
    ws,
    next(timeoutMs = 30_000) {
      if (queue.length) return Promise.resolve(queue.shift());
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no WebSocket message in time')), timeoutMs);
        waiters.push((m) => { clearTimeout(timer); resolve(m); });
      });
    },
    async call(method, ...params) {
      ws.send(JSON.stringify(rpc(method, ...params)));
      return this.next();
    },
  };
}

// mine asks stack's dev builder for a block.
async function mine(stack) {
  const r = await post(stack.devBuilder, rpc('evm_mine'));
  assert.equal(r.status, 200);
  assert.match(r.body.result, /^0x[0-9a-f]{64}$/);
}

// describeOrderflow runs the flow on the stack start() starts (startStack's
// or startCluster's fields: the dev builder, the chain, the orderflow
// addresses), named after shape.
export function describeOrderflow(shape, start) {
  describe(`on ${shape}`, () => {
    let stack;
    let provider;

    before(async () => {
      stack = await start();
      provider = new ethers.JsonRpcProvider(stack.chainRPC, 1337, { staticNetwork: true });
    });

    after(async () => {
      provider?.destroy();
      await stack?.stop();
    });

    test('originator tx, searcher backrun, inclusion, refund pending → paid → confirmed', { timeout: 300_000 }, async () => {
      const originator = new ethers.Wallet(ORIGINATOR_KEY, provider);
      const searcher = new ethers.Wallet(SEARCHER_KEY, provider);
      const refundRecipient = ethers.Wallet.createRandom().address.toLowerCase();
      const [originatorKey, searcherKey] = [await apiKey(stack, originator), await apiKey(stack, searcher)];

      const sock = await socket(`${stack.searcherWS}/v1/${searcherKey}`);
      const sub = await sock.call('eth_subscribe', 'svc_partialPendingBundles');
      assert.match(sub.result, /^0x[0-9a-f]{32}$/);

      // The originator sends a signed transaction to its partner endpoint
      // with a refund of 50 % of what a backrun pays to a fresh address.
      const raw = await originator.signTransaction({
        type: 2, chainId: 1337, nonce: await provider.getTransactionCount(originator.address, 'pending'),
        to: '0x00000000000000000000000000000000000000e1', value: 1n, gasLimit: 21000n,
        maxFeePerGas: 200n * GWEI, maxPriorityFeePerGas: 1n * GWEI,
      });
      const txHash = ethers.keccak256(raw);
      const sent = await post(`${stack.originator}/v1/${originatorKey}?refund=${refundRecipient}:50`, rpc('eth_sendRawTransaction', raw));
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      assert.equal(sent.body.result, txHash);

      // The searcher gets it decoded, without a signature.
      const note = await sock.next();
      assert.equal(note.method, 'eth_subscription');
      assert.equal(note.params.subscription, sub.result);
      assert.equal(note.params.result.length, 1);
      const seen = note.params.result[0];
      const tx = ethers.Transaction.from(raw);
      assert.equal(seen.hash, txHash);
      assert.equal(seen.from, originator.address.toLowerCase());
      assert.equal(seen.to, tx.to.toLowerCase());
      assert.equal(BigInt(seen.nonce), BigInt(tx.nonce));
      assert.equal(BigInt(seen.value), tx.value);
      assert.equal(BigInt(seen.gas), tx.gasLimit);
      assert.equal(BigInt(seen.maxFeePerGas), tx.maxFeePerGas);
      assert.equal(BigInt(seen.chainId), 1337n);
      for (const field of ['v', 'r', 's', 'yParity', 'signature', 'raw']) assert.equal(seen[field], undefined, field);

      // The searcher backruns it over the socket, paying the builder a high
      // priority fee.
      const backrun = await searcher.signTransaction({
        type: 2, chainId: 1337, nonce: await provider.getTransactionCount(searcher.address, 'pending'),
        to: '0x00000000000000000000000000000000000000e2', value: 0n, gasLimit: 21000n,
        maxFeePerGas: 200n * GWEI, maxPriorityFeePerGas: 50n * GWEI,
      });
      const backrunHash = ethers.keccak256(backrun);
      const bundle = await sock.call('eth_sendBundle', { txs: [txHash, backrun] });
      const bundleHash = bundle.result?.bundleHash;
      assert.equal(bundleHash, ethers.keccak256(ethers.concat([txHash, backrunHash])), JSON.stringify(bundle));

      const bundleStatus = async () => (await get(`${stack.orderflow}/v1/bundle?hash=${bundleHash}`)).body.data;
      await waitUntil('the bundle to reach the builder', async () => (await bundleStatus()).status === 'FORWARDED');
      await mine(stack);

      // Both are in one block (ordered by fee by the dev chain's miner).
      const txStatus = await waitUntil('the tx to be INCLUDED', async () => {
        const d = (await get(`${stack.orderflow}/v1/tx/${txHash}`)).body.data;
        return d.status === 'INCLUDED' && d;
      });
      const b = await waitUntil('the bundle to be INCLUDED', async () => { const d = await bundleStatus(); return d.status === 'INCLUDED' && d; });
      assert.equal(b.backrunOf, txHash);
      assert.deepEqual(b.txHashes, [txHash, backrunHash]);
      const [r1, r2] = [await provider.getTransactionReceipt(txHash), await provider.getTransactionReceipt(backrunHash)];
      assert.equal(r1.blockNumber, r2.blockNumber);
      assert.equal(txStatus.blockNumber, r1.blockNumber);

      // The refund is 50 % of the backrun's priority fee times its gas.
      const block = await provider.getBlock(r2.blockNumber);
      const payment = (r2.gasPrice - block.baseFeePerGas) * r2.gasUsed;
      const refunds = async () => (await get(`${stack.orderflow}/v1/${originatorKey}/refunds`)).body.data;
      const pending = await waitUntil('the refund to be PENDING', async () => {
        const d = await refunds();
        return d.pending.length === 1 && d.pending[0].status === 'PENDING' && d.pending[0];
      });
      assert.equal(pending.txHash, txHash);
      assert.equal(pending.bundleHash, bundleHash);
      assert.equal(pending.recipient, refundRecipient);
      assert.equal(pending.percent, 50);
      assert.equal(BigInt(pending.paymentWei), payment);
      assert.equal(BigInt(pending.amountWei), payment / 2n);
      assert.equal(pending.payoutTxHash ?? '', '');

      // One more block confirms the backrun's block: the refund is paid.
      await mine(stack);
      const paid = await waitUntil('the refund to be PAID', async () => {
        const d = await refunds();
        return d.pending.length === 1 && d.pending[0].status === 'PAID' && d.pending[0];
      });
      assert.match(paid.payoutTxHash, /^0x[0-9a-f]{64}$/);

      // The next block includes the payout: CONFIRMED, and the money is there.
      await mine(stack);
      const confirmed = await waitUntil('the refund to be CONFIRMED', async () => {
        const d = await refunds();
        return d.confirmed.length === 1 && d.pending.length === 0 && d.confirmed[0];
      });
      assert.equal(confirmed.payoutTxHash, paid.payoutTxHash);
      const payout = await provider.getTransactionReceipt(paid.payoutTxHash);
      assert.equal(confirmed.payoutBlock, payout.blockNumber);
      assert.equal(await provider.getBalance(refundRecipient), payment / 2n);

      // The owner reads its transaction privately with the refund policy.
      const owned = (await get(`${stack.orderflow}/v1/${originatorKey}/tx/${txHash}`)).body.data;
      assert.deepEqual(owned.refundPolicy, { recipient: refundRecipient, percent: 50 });
      assert.equal(owned.refunds.length, 1);
      sock.ws.close();
    });
  });
}
