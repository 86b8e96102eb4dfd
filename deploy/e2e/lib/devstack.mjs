// Starts the whole exchange (deploy/cmd/exchange) as a separate process on
// free loopback ports with a fresh data directory, for end-to-end tests
// that drive it the way outside clients do, and stops it cleanly.
import { spawn, execFile } from 'node:child_process';
import { mkdtemp, chmod, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

// freePorts returns n distinct ports the kernel reports free on 127.0.0.1.
async function freePorts(n) {
  const servers = await Promise.all(Array.from({ length: n }, () => new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => resolve(s));
  })));
  const ports = servers.map((s) => s.address().port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

// waitUntil polls check every 100 ms until it returns a truthy value.
export async function waitUntil(what, check, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// startStack builds and starts the dev stack. env adds or overrides
// variables (README "Configuration"). The result carries the addresses
// and stop(), which sends SIGTERM, expects a clean exit and removes the
// data directory.
export async function startStack(env = {}) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'blockspace-e2e-'));
  await chmod(dir, 0o755); // the private Postgres runs as the postgres OS user
  const bin = path.join(dir, 'exchange');
  await promisify(execFile)('go', ['build', '-o', bin, './deploy/cmd/exchange'], { cwd: repo, maxBuffer: 16 << 20 });
  // The broker's jars: resolved once by the script, which prints where they are.
  const { stdout: kafkaLibs } = await promisify(execFile)('bash', ['scripts/ensure-kafka.sh'], { cwd: repo });

  const [rest, admin, kafka, originator, searcher, orderflow, builder, chain] = await freePorts(8);
  const addr = (p) => `127.0.0.1:${p}`;
  const vars = {
    DATA_DIR: path.join(dir, 'data'),
    HTTP_ADDR: addr(rest), ADMIN_ADDR: addr(admin), KAFKA_ADDR: addr(kafka),
    ORIGINATOR_ADDR: addr(originator), SEARCHER_ADDR: addr(searcher), ORDERFLOW_ADDR: addr(orderflow),
    DEV_BUILDER_ADDR: addr(builder), CHAIN_ADDR: addr(chain),
    LOG_LEVEL: 'warn',
    // The tests run on a real Apache Kafka broker, which the stack starts
    // from the jars of scripts/ensure-kafka.sh (make run-kafka does the same).
    EMBEDDED_KAFKA: 'apache',
    KAFKA_LIBS: kafkaLibs.trim(),
    ...env,
  };
  const child = spawn(bin, [], { cwd: dir, env: { ...process.env, ...vars }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (b) => { output += b; });
  child.stderr.on('data', (b) => { output += b; });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));

  const stack = {
    rest: `http://${addr(rest)}`,
    admin: `http://${addr(admin)}`,
    originator: `http://${addr(originator)}`,
    searcher: `http://${addr(searcher)}`,
    searcherWS: `ws://${addr(searcher)}`,
    orderflow: `http://${addr(orderflow)}`,
    devBuilder: `http://${addr(builder)}`,
    chainRPC: `http://${addr(chain)}`,
    kafka: addr(kafka),
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      const { code, signal } = await exited;
      clearTimeout(timer);
      await rm(dir, { recursive: true, force: true });
      if (code !== 0) throw new Error(`exchange exited with ${code ?? signal} after SIGTERM:\n${output}`);
    },
  };
  try {
    await Promise.race([
      waitUntil('the stack to report ready', async () => {
        const r = await fetch(`${stack.admin}/readyz`).catch(() => null);
        return r?.status === 200;
      }, 180_000),
      exited.then(({ code, signal }) => { throw new Error(`exchange exited with ${code ?? signal} while starting:\n${output}`); }),
    ]);
  } catch (err) {
    await stack.stop().catch(() => {});
    throw err;
  }
  return stack;
}
