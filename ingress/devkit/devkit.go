// Package devkit is what the dev stack, the local cluster and the dev
// tools need of ingress and production does not: the dev beacon chain,
// the demo validator's registration, a client's registration signature
// and a signing key made on first use. No service binary links it
// (deploy's TestBinariesLinkNoDevOnlyPackage).
package devkit

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/ingress/internal/login"
	"blockspace.exchange/ingress/internal/validators"
	"blockspace.exchange/platform/auth"
	"blockspace.exchange/topics"
)

// RegisterValidator makes sure the user of address exists and has the
// validator of the BLS key derived from seed registered, signed the way a
// client signs (docs/validators.md). It returns the validator's public
// key. The dev stack uses it for its demo validator.
func RegisterValidator(ctx context.Context, pool *pgxpool.Pool, chainID int64, address string, seed []byte) (string, error) {
	address = strings.ToLower(address)
	addr, err := validators.ParseAddress(address)
	if err != nil {
		return "", fmt.Errorf("dev validator: %w", err)
	}
	userID, err := login.EnsureUser(ctx, pool, address, "Demo validator")
	if err != nil {
		return "", fmt.Errorf("dev validator: %w", err)
	}
	sk, err := validators.SecretKey(seed)
	if err != nil {
		return "", fmt.Errorf("dev validator: %w", err)
	}
	pubkey, sig := validators.Sign(sk, chainID, addr)
	rawSig, err := hex.DecodeString(strings.TrimPrefix(sig, "0x"))
	if err != nil {
		return "", fmt.Errorf("dev validator: %w", err)
	}
	// The outbox relay publishes the registration record.
	reg := topics.ValidatorRegistered{Pubkey: pubkey, UserID: userID, Address: address, ValidatorIndex: devIndex(pubkey)}
	if _, _, err := validators.Insert(ctx, pool, reg, rawSig); err != nil {
		return "", fmt.Errorf("dev validator: register: %w", err)
	}
	return pubkey, nil
}

// SignValidatorRegistration returns the public key of the BLS key derived
// from seed (at least 32 bytes) and its registration signature for
// address on chainID, as POST /api/v1/validator/register expects them.
func SignValidatorRegistration(seed []byte, chainID int64, address string) (pubkey, signature string, err error) {
	addr, err := validators.ParseAddress(address)
	if err != nil {
		return "", "", err
	}
	sk, err := validators.SecretKey(seed)
	if err != nil {
		return "", "", err
	}
	pubkey, signature = validators.Sign(sk, chainID, addr)
	return pubkey, signature, nil
}

// LoadOrCreateSigningKey reads the PEM key at path, or generates a P-256
// key and writes it there (directory 0700, file 0600) when none exists.
// Production configures its key instead.
func LoadOrCreateSigningKey(path string) (*ecdsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err == nil {
		return auth.ParsePrivateKey(data)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read signing key: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate signing key: %w", err)
	}
	pemBytes, err := auth.EncodePrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create key directory: %w", err)
	}
	if err := os.WriteFile(path, pemBytes, 0o600); err != nil {
		return nil, fmt.Errorf("write signing key: %w", err)
	}
	return key, nil
}
