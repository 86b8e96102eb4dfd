package settler

import (
	"crypto/ecdsa"
	"fmt"
	"os"
	"strings"

	"github.com/ethereum/go-ethereum/crypto"

	"blockspace.exchange/platform/chain"
	"blockspace.exchange/platform/config"
)

// ConfigFromEnv reads the settler's variables (docs/deploy.md):
//
//   - SETTLER_GROUP (settler): the ledger consumer's group;
//   - SETTLER_MAX_BATCH (5000, 1 to 100000): records per transaction;
//   - SETTLER_INSTANCE_ID (unset): static group membership, opt-in, as it
//     suits instances with stable ids (a StatefulSet).
//
// Brokers and compression are the process's own (process.Common); errors
// are reported on r.
func ConfigFromEnv(r *config.Reader) Config {
	return Config{
		Group:      r.String("SETTLER_GROUP", DefaultGroup),
		MaxBatch:   r.Int("SETTLER_MAX_BATCH", DefaultMaxBatch, 1, 100_000),
		InstanceID: r.StringOrEmpty("SETTLER_INSTANCE_ID", ""),
	}
}

// WithdrawalConfigFromEnv reads the withdrawal executor's variables:
// CHAIN_RPC_URL (unset: withdrawals are debited but not paid) and, when
// it is set, COLLATERAL_CONTRACT and the operator's hex key in
// WITHDRAW_OPERATOR_KEY_FILE or WITHDRAW_OPERATOR_KEY; CHAIN_CONFIRMATIONS
// (12, 0 to 10000) and CHAIN_POLL (2s, 100ms to 1m). The chain id is the
// environment's; errors are reported on r.
func WithdrawalConfigFromEnv(r *config.Reader) WithdrawalConfig {
	follow := chain.FollowFromEnv(r)
	w := WithdrawalConfig{
		ChainRPCURL:   r.String("CHAIN_RPC_URL", ""),
		Confirmations: follow.Confirmations,
		Poll:          follow.Poll,
	}
	if w.ChainRPCURL == "" {
		return w
	}
	w.Contract = chain.ContractFromEnv(r)
	key, err := operatorKey(r)
	if err != nil {
		r.Fail("%v", err)
	}
	w.OperatorKey = key
	return w
}

// operatorKey reads the operator's hex key from WITHDRAW_OPERATOR_KEY_FILE
// or else WITHDRAW_OPERATOR_KEY.
func operatorKey(r *config.Reader) (*ecdsa.PrivateKey, error) {
	keyHex := r.String("WITHDRAW_OPERATOR_KEY", "")
	if file := r.String("WITHDRAW_OPERATOR_KEY_FILE", ""); file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("WITHDRAW_OPERATOR_KEY_FILE: %w", err)
		}
		keyHex = string(b)
	}
	key, err := crypto.HexToECDSA(strings.TrimPrefix(strings.TrimSpace(keyHex), "0x"))
	if err != nil {
		return nil, fmt.Errorf("WITHDRAW_OPERATOR_KEY(_FILE) must hold the operator's hex private key when CHAIN_RPC_URL is set: %w", err)
	}
	return key, nil
}
