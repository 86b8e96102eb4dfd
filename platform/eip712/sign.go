// Package eip712 does for test and load clients what a user's wallet does
// when it logs in to the exchange: sign the EIP-712 typed data of a login
// challenge exactly as the server sent it (eth_signTypedData_v4, as
// ethers, viem and MetaMask do).
package eip712

import (
	"crypto/ecdsa"
	"encoding/json"
	"fmt"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// Sign signs the EIP-712 JSON document doc with key and returns
// the 65-byte signature r‖s‖v as 0x hex, with v 27 or 28 as wallets write
// it.
func Sign(key *ecdsa.PrivateKey, doc string) (string, error) {
	var td apitypes.TypedData
	if err := json.Unmarshal([]byte(doc), &td); err != nil {
		return "", fmt.Errorf("typed data does not parse as EIP-712: %w", err)
	}
	hash, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		return "", fmt.Errorf("hash typed data: %w", err)
	}
	sig, err := crypto.Sign(hash, key)
	if err != nil {
		return "", fmt.Errorf("sign typed data: %w", err)
	}
	sig[64] += 27
	return hexutil.Encode(sig), nil
}

// Wallet is a key that signs as a user's wallet does.
type Wallet struct {
	Key     *ecdsa.PrivateKey
	Address string // EIP-55 checksummed, as wallets present it
}

// NewWallet returns a wallet with a fresh secp256k1 key.
func NewWallet() (Wallet, error) {
	key, err := crypto.GenerateKey()
	if err != nil {
		return Wallet{}, fmt.Errorf("generate wallet key: %w", err)
	}
	return Wallet{Key: key, Address: crypto.PubkeyToAddress(key.PublicKey).Hex()}, nil
}

// Sign signs the EIP-712 JSON document doc (see Sign).
func (w Wallet) Sign(doc string) (string, error) { return Sign(w.Key, doc) }
