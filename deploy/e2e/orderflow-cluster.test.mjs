// Private orderflow end to end (lib/orderflow.mjs) on the production
// shape: three brokers, a process per service, the nginx gateway in front,
// every request through the gateway. A file of its own, so that the test
// runner starts the cluster while the other files run.
import { startCluster } from './lib/cluster.mjs';
import { describeOrderflow } from './lib/orderflow.mjs';

describeOrderflow('the production shape behind the gateway', () => startCluster({ DEV_BLOCK_INTERVAL: '0' }));
