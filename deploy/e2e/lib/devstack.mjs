// Starts the whole exchange (deploy/cmd/exchange) as a separate process on
// free loopback ports with a fresh data directory, for end-to-end tests
// that drive it the way outside clients do, and stops it cleanly.
import { spawn, execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { access, mkdtemp, chmod, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

// freePorts returns n distinct ports free on 127.0.0.1, chosen at random
// below the kernel's ephemeral range (ip_local_port_range). A stack binds
// its ports a while after they are chosen; a port the kernel handed out
// for listen(0) is back in that range once closed, where any outgoing
// connection on the machine may take it meanwhile, and one below the
// range is never taken that way.
export async function freePorts(n) {
  const [low] = (await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch(() => '32768'))
    .trim().split(/\s+/).map(Number);
  const first = 10_000;
  if (!(low - first > 1000 + n)) throw new Error(`the ephemeral port range starts at ${low}: no room below it`);
  const ports = new Set();
  while (ports.size < n) {
    const port = first + Math.floor(Math.random() * (low - first));
    if (!ports.has(port) && await canListen(port)) ports.add(port);
  }
  return [...ports];
}

// canListen reports whether port can be bound on 127.0.0.1 now.
function canListen(port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

// retryTakenPorts calls start, which chooses free ports and starts a
// process on them, up to three times while it fails because another
// process took one of its ports before it bound it.
export async function retryTakenPorts(start) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (attempt === 3 || !/address already in use/i.test(err.message)) throw err;
    }
  }
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

// Binaries built by this process, by command name: node --test runs each
// file in a process of its own, and a file that starts a command twice
// builds it once.
const built = new Map();

// binary returns the path of the command ./deploy/cmd/<name>. With
// E2E_BIN_DIR set (make test-e2e builds every command the tests start
// there, once for the whole run) it is the one in that directory;
// without, `node --test` alone, the command is built on first use into a
// temporary directory removed when the process exits.
export function binary(name) {
  if (!built.has(name)) built.set(name, locate(name));
  return built.get(name);
}

async function locate(name) {
  const shared = process.env.E2E_BIN_DIR;
  if (shared) {
    const bin = path.join(shared, name);
    await access(bin).catch(() => {
      throw new Error(`E2E_BIN_DIR=${shared} has no ${name}: build it with go build -o ${shared}/ ./deploy/cmd/${name} (make test-e2e does), or unset E2E_BIN_DIR`);
    });
    return bin;
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), `blockspace-bin-${name}-`));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const bin = path.join(dir, name);
  await promisify(execFile)('go', ['build', '-o', bin, `./deploy/cmd/${name}`], { cwd: repo, maxBuffer: 16 << 20 });
  return bin;
}

// launch starts the command ./deploy/cmd/<name> (see binary) with
// vars(dir) over this process's environment, dir being a fresh temporary
// directory, in that directory or in cwd(dir). It returns once
// ready(output) holds, with the process's output() and stop(), which sends
// SIGTERM, expects exit status 0 and removes the directory. timeoutMs
// only ends a broken start: on two cores shared with the Go tests a dev
// stack has taken more than three minutes to be ready.
export async function launch(name, vars, ready, { cwd = (dir) => dir, timeoutMs = 600_000 } = {}) {
  const bin = await binary(name);
  const dir = await mkdtemp(path.join(os.tmpdir(), `blockspace-${name}-`));
  await chmod(dir, 0o755); // the private Postgres runs as the postgres OS user
  const env = { ...process.env, ...(await vars(dir)) };
  const child = spawn(bin, [], { cwd: cwd(dir), env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (b) => { output += b; });
  child.stderr.on('data', (b) => { output += b; });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const proc = {
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
      const { code, signal } = await exited;
      clearTimeout(timer);
      await rm(dir, { recursive: true, force: true });
      if (code !== 0) throw new Error(`${name} exited with ${code ?? signal} after SIGTERM:\n${output}`);
    },
  };
  // One poll asks both whether it is ready and whether it is gone, so a
  // process that exits while starting ends the wait at once: nothing keeps
  // polling, and this process, after the test.
  let gone = null;
  exited.then((r) => { gone = r; });
  try {
    await waitUntil(`${name} to be ready`, () => {
      if (gone) throw new Error(`${name} exited with ${gone.code ?? gone.signal} while starting:\n${output}`);
      return ready(output);
    }, timeoutMs);
  } catch (err) {
    if (!gone) err.message += `; the end of its output:\n${output.slice(-4000)}`;
    await proc.stop().catch(() => {});
    throw err;
  }
  return proc;
}

// kafkaLibs is where scripts/ensure-kafka.sh put the broker's jars (it
// resolves them once, then prints the directory).
export async function kafkaLibs() {
  const { stdout } = await promisify(execFile)('bash', ['scripts/ensure-kafka.sh'], { cwd: repo });
  return stdout.trim();
}

// startStack starts the dev stack (see binary). env adds or overrides
// variables (README "Configuration"). The result carries the addresses
// and stop(), which sends SIGTERM, expects a clean exit and removes the
// data directory.
export async function startStack(env = {}) {
  const libs = await kafkaLibs();
  return retryTakenPorts(() => startStackOnce(libs, env));
}

async function startStackOnce(libs, env) {
  const [rest, admin, kafka, originator, searcher, orderflow, builder, chain] = await freePorts(8);
  const addr = (p) => `127.0.0.1:${p}`;
  const vars = (dir) => ({
    DATA_DIR: path.join(dir, 'data'),
    HTTP_ADDR: addr(rest), ADMIN_ADDR: addr(admin), KAFKA_ADDR: addr(kafka),
    ORIGINATOR_ADDR: addr(originator), SEARCHER_ADDR: addr(searcher), ORDERFLOW_ADDR: addr(orderflow),
    DEV_BUILDER_ADDR: addr(builder), CHAIN_ADDR: addr(chain),
    LOG_LEVEL: 'warn',
    // The tests run on a real Apache Kafka broker, which the stack starts
    // from the jars of scripts/ensure-kafka.sh (make run-kafka does the same).
    EMBEDDED_KAFKA: 'apache',
    KAFKA_LIBS: libs,
    ...env,
  });
  const ready = async () => (await fetch(`http://${addr(admin)}/readyz`).catch(() => null))?.status === 200;
  const proc = await launch('exchange', vars, ready);
  return {
    rest: `http://${addr(rest)}`,
    admin: `http://${addr(admin)}`,
    originator: `http://${addr(originator)}`,
    searcher: `http://${addr(searcher)}`,
    searcherWS: `ws://${addr(searcher)}`,
    orderflow: `http://${addr(orderflow)}`,
    devBuilder: `http://${addr(builder)}`,
    chainRPC: `http://${addr(chain)}`,
    kafka: addr(kafka),
    output: proc.output,
    stop: proc.stop,
  };
}
