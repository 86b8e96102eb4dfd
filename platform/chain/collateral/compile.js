// Compiles Collateral.sol with the pinned solc (package.json) through the
// standard JSON interface and writes Collateral.abi and Collateral.bin.
const fs = require('fs');
const path = require('path');
const solc = require('solc');

const source = fs.readFileSync(path.join(__dirname, 'Collateral.sol'), 'utf8');
const input = {
  language: 'Solidity',
  sources: { 'Collateral.sol': { content: source } },
  settings: {
    evmVersion: 'cancun',
    optimizer: { enabled: true, runs: 200 },
    outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
  },
};
const output = JSON.parse(solc.compile(JSON.stringify(input)));
const errors = (output.errors || []).filter((e) => e.severity === 'error');
if (errors.length) {
  errors.forEach((e) => console.error(e.formattedMessage));
  process.exit(1);
}
const c = output.contracts['Collateral.sol'].Collateral;
fs.writeFileSync(path.join(__dirname, 'Collateral.abi'), JSON.stringify(c.abi, null, 2) + '\n');
fs.writeFileSync(path.join(__dirname, 'Collateral.bin'), c.evm.bytecode.object + '\n');
console.log('compiled with solc', solc.version());
