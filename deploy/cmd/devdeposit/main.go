// Command devdeposit sends a deposit to the collateral contract of a
// running dev stack over the dev chain's JSON-RPC (CHAIN_ADDR):
//
//	go run ./deploy/cmd/devdeposit -key <hex> -amount 1.5      # deposit for that key's wallet
//	go run ./deploy/cmd/devdeposit -address 0x… -amount 1.5    # a dev key pays, the address is credited
//
// The wallet is credited once the deposit is CHAIN_CONFIRMATIONS blocks
// deep.
package main

import (
	"context"
	"crypto/ecdsa"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/shopspring/decimal"

	"blockspace.exchange/deploy/devchain"
	"blockspace.exchange/platform/chain/collateral"
)

func main() {
	rpcURL := flag.String("rpc", "http://127.0.0.1:8545", "the dev chain's JSON-RPC (the dev stack's CHAIN_ADDR)")
	keyHex := flag.String("key", "", "private key (hex) that pays and is credited")
	address := flag.String("address", "", "wallet to credit; dev key 1 pays")
	amount := flag.String("amount", "1", "ETH to deposit")
	flag.Parse()
	if err := run(*rpcURL, *keyHex, *address, *amount); err != nil {
		fmt.Fprintln(os.Stderr, "devdeposit:", err)
		os.Exit(1)
	}
}

func run(rpcURL, keyHex, address, amount string) error {
	if (keyHex == "") == (address == "") {
		return fmt.Errorf("give exactly one of -key and -address")
	}
	if address != "" && !common.IsHexAddress(address) {
		return fmt.Errorf("-address %q is not a 0x address", address)
	}
	q, err := decimal.NewFromString(amount)
	if err != nil || !q.IsPositive() {
		return fmt.Errorf("-amount %q must be a positive decimal", amount)
	}
	var key *ecdsa.PrivateKey
	if keyHex != "" {
		key, err = crypto.HexToECDSA(strings.TrimPrefix(keyHex, "0x"))
	} else {
		key, err = crypto.HexToECDSA(devchain.DevKeys[1])
	}
	if err != nil {
		return fmt.Errorf("-key: %w", err)
	}
	to := crypto.PubkeyToAddress(key.PublicKey)
	if address != "" {
		to = common.HexToAddress(address)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eth, err := ethclient.DialContext(ctx, rpcURL)
	if err != nil {
		return err
	}
	defer eth.Close()
	chainID, err := eth.ChainID(ctx)
	if err != nil {
		return fmt.Errorf("is the dev stack running? %w", err)
	}
	c, err := collateral.NewCollateral(devchain.CollateralAddress(), eth)
	if err != nil {
		return err
	}
	auth, err := bind.NewKeyedTransactorWithChainID(key, chainID)
	if err != nil {
		return err
	}
	auth.Context, auth.Value = ctx, q.Shift(18).BigInt()
	tx, err := c.DepositFor(auth, to)
	if err != nil {
		return fmt.Errorf("deposit: %w", err)
	}
	receipt, err := bind.WaitMined(ctx, eth, tx)
	if err != nil {
		return err
	}
	fmt.Printf("deposited %s ETH for %s in block %d (tx %s, status %d)\n", q, to.Hex(), receipt.BlockNumber, tx.Hash().Hex(), receipt.Status)
	return nil
}
