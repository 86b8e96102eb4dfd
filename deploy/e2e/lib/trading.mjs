// What the end-to-end tests do as traders: log in over REST with a dev
// key, and place orders the way ingress publishes them, straight on the
// `orders` topic (kafkajs), for tests about what happens after ingress.
import assert from 'node:assert/strict';
import { ethers } from 'ethers';

// The demo seller's dev-only key (deploy/devchain DemoUserKey) and another
// well-known dev key for a buyer.
export const SELLER_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
export const BUYER_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
const ORDER_PARTITIONS = 16; // the orders topic's default slot layout (docs/topics.md)

// login signs the server's EIP-712 message and returns the user with its
// preconf trading account and access token.
export async function login(rest, key, agent = 'e2e') {
  const wallet = new ethers.Wallet(key);
  const addr = wallet.address.toLowerCase();
  const form = (o) => ({ method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'User-Agent': agent },
    body: new URLSearchParams(o).toString() });
  const ch = await (await fetch(`${rest}/api/v1/user/login`, form({ addr }))).json();
  assert.equal(ch.success, true, JSON.stringify(ch));
  const typed = JSON.parse(ch.data.eip712Message);
  const signature = await wallet.signTypedData(typed.domain, { data: typed.types.data }, typed.message);
  const v = await (await fetch(`${rest}/api/v1/user/login/verify`, form({ addr, nonceHash: ch.data.nonceHash, signature }))).json();
  assert.equal(v.success, true, JSON.stringify(v));
  const user = v.data.user;
  return { userId: user.userId, accountId: user.accounts.find((a) => a.type === 2).accountId, token: v.data.accessToken.token };
}

// placeOnTopic publishes an order.place command of one whole-block lot
// on the slot's orders partition.
export async function placeOnTopic(producer, who, instrumentId, side, price, orderId) {
  const slot = Number(instrumentId.split('-')[2]);
  const envelope = { type: 'order.place', version: 1, id: `e2e-place-${orderId}`, time: Date.now(),
    data: { orderId, userId: who.userId, accountId: who.accountId, instrumentId, side, orderType: 2,
      quantity: '1', price, passive: false, source: 1 } };
  await producer.send({ topic: 'orders', messages: [{ key: String(slot), partition: slot % ORDER_PARTITIONS,
    value: JSON.stringify(envelope), headers: { type: 'order.place', version: '1' } }] });
}
