#!/usr/bin/env bash
# Regenerates Collateral.abi, Collateral.bin and the Go binding collateral.go
# from Collateral.sol: solc from npm (version pinned in package.json and
# package-lock.json), abigen of the go-ethereum version in platform/go.mod.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --silent
node compile.js
geth_version=$(cd ../../ && go list -m -f '{{.Version}}' github.com/ethereum/go-ethereum)
go run "github.com/ethereum/go-ethereum/cmd/abigen@${geth_version}" \
	--abi Collateral.abi --bin Collateral.bin --pkg collateral --type Collateral --out collateral.go
gofmt -w collateral.go
