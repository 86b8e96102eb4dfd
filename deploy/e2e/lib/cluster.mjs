// Starts the production shape (deploy/cmd/cluster, make run-cluster) as a
// separate process on free loopback ports with a fresh data directory:
// three Apache Kafka brokers, every service as its own process, the nginx
// gateway in front. The result has the fields of startStack's, every
// client address pointing at the gateway, so the same flows run on both.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { freePorts, kafkaLibs, launch, retryTakenPorts } from './devstack.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

// bannerValue returns the first address on the banner line named label.
function bannerValue(output, label) {
  const m = output.match(new RegExp(`^  ${label}\\s+(\\S+)`, 'm'));
  if (!m) throw new Error(`cluster banner has no ${label} line:\n${output}`);
  return m[1];
}

// startCluster starts the cluster runner (lib/devstack.mjs binary says
// where it comes from), which builds the service binaries. env adds or
// overrides variables (docs/deploy.md "The production shape on one
// machine"). stop() sends SIGTERM, expects a clean exit and removes the
// data directory.
export async function startCluster(env = {}) {
  const libs = await kafkaLibs();
  await promisify(execFile)('bash', ['scripts/ensure-nginx.sh'], { cwd: repo });
  return retryTakenPorts(() => startClusterOnce(libs, env));
}

async function startClusterOnce(libs, env) {
  const [rest, originator, searcher, orderflow, k1, k2, k3] = await freePorts(7);
  const addr = (p) => `127.0.0.1:${p}`;
  const vars = (dir) => ({
    DATA_DIR: path.join(dir, 'data'),
    HTTP_ADDR: addr(rest), ORIGINATOR_ADDR: addr(originator), SEARCHER_ADDR: addr(searcher), ORDERFLOW_ADDR: addr(orderflow),
    KAFKA_ADDRS: [k1, k2, k3].map(addr).join(','),
    KAFKA_LIBS: libs,
    LOG_LEVEL: 'warn',
    ...env,
  });
  // The runner finds the compose file and the sources from the repository.
  const proc = await launch('cluster', vars, (output) => output.includes('stop with Ctrl-C'), { cwd: () => repo });
  return {
    rest: `http://${addr(rest)}`,
    originator: `http://${addr(originator)}`,
    searcher: `http://${addr(searcher)}`,
    searcherWS: `ws://${addr(searcher)}`,
    orderflow: `http://${addr(orderflow)}`,
    kafka: addr(k1),
    chainRPC: bannerValue(proc.output(), 'dev chain'),
    devBuilder: bannerValue(proc.output(), 'dev builder'),
    output: proc.output,
    stop: proc.stop,
  };
}
