// Private orderflow end to end on the dev stack (lib/orderflow.mjs): an
// originator's transaction, a searcher's backrun, inclusion and the
// refund from pending to confirmed.
import { startStack } from './lib/devstack.mjs';
import { describeOrderflow } from './lib/orderflow.mjs';

describeOrderflow('the dev stack', () => startStack({ DEV_BLOCK_INTERVAL: '0', REFUND_CONFIRMATIONS: '1' }));
