package orderflow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ChallengeStatement is the fixed statement of the API-key challenge.
const ChallengeStatement = "I own this wallet and want an API key for private orderflow."

// ChallengeTTL is how long a challenge can be answered.
const ChallengeTTL = 5 * time.Minute

// Challenge is the EIP-712 document an account signs to get an API key,
// in the JSON shape eth_signTypedData_v4 and ethers' signTypedData take
// (ethers: signTypedData(domain, {data: types.data}, message)).
type Challenge struct {
	Types       map[string][]apitypes.Type `json:"types"`
	PrimaryType string                     `json:"primaryType"`
	Domain      ChallengeDomain            `json:"domain"`
	Message     ChallengeMessage           `json:"message"`
}

// ChallengeDomain is the EIP-712 domain of the challenge.
type ChallengeDomain struct {
	Name              string `json:"name"`
	Version           string `json:"version"`
	ChainID           int64  `json:"chainId"`
	VerifyingContract string `json:"verifyingContract"`
}

// ChallengeMessage is the signed message: the nonce, the statement, the
// account and the expiry (UNIX ms, as a string because EIP-712 "string").
type ChallengeMessage struct {
	Nonce     string `json:"nonce"`
	Statement string `json:"statement"`
	Address   string `json:"address"`
	ExpiresAt string `json:"expiresAt"`
}

// NewChallenge builds the document for address with a fresh nonce.
func NewChallenge(product string, chainID int64, address string, expires time.Time) (Challenge, error) {
	var n [16]byte
	if _, err := rand.Read(n[:]); err != nil {
		return Challenge{}, fmt.Errorf("challenge nonce: %w", err)
	}
	return ChallengeFor(product, chainID, address, "0x"+hex.EncodeToString(n[:]), expires), nil
}

// ChallengeFor rebuilds the document of a stored challenge.
func ChallengeFor(product string, chainID int64, address, nonce string, expires time.Time) Challenge {
	return Challenge{
		Types: map[string][]apitypes.Type{
			"EIP712Domain": {
				{Name: "name", Type: "string"}, {Name: "version", Type: "string"},
				{Name: "chainId", Type: "uint256"}, {Name: "verifyingContract", Type: "address"},
			},
			"data": {
				{Name: "nonce", Type: "string"}, {Name: "statement", Type: "string"},
				{Name: "address", Type: "string"}, {Name: "expiresAt", Type: "string"},
			},
		},
		PrimaryType: "data",
		Domain: ChallengeDomain{Name: product + " Orderflow", Version: "1", ChainID: chainID,
			VerifyingContract: "0x0000000000000000000000000000000000000000"},
		Message: ChallengeMessage{Nonce: nonce, Statement: ChallengeStatement,
			Address: address, ExpiresAt: fmt.Sprint(expires.UnixMilli())},
	}
}

// Digest is the EIP-712 hash the wallet signs.
func (c Challenge) Digest() ([]byte, error) {
	td := apitypes.TypedData{
		Types:       apitypes.Types(c.Types),
		PrimaryType: c.PrimaryType,
		Domain: apitypes.TypedDataDomain{
			Name: c.Domain.Name, Version: c.Domain.Version,
			ChainId:           (*math.HexOrDecimal256)(big.NewInt(c.Domain.ChainID)),
			VerifyingContract: c.Domain.VerifyingContract,
		},
		Message: apitypes.TypedDataMessage{
			"nonce": c.Message.Nonce, "statement": c.Message.Statement,
			"address": c.Message.Address, "expiresAt": c.Message.ExpiresAt,
		},
	}
	h, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		return nil, fmt.Errorf("hash challenge: %w", err)
	}
	return h, nil
}

// RecoverSigner returns the address whose key made sig (65 bytes r‖s‖v,
// v 0/1 or 27/28) over digest.
func RecoverSigner(digest, sig []byte) (common.Address, error) {
	if len(sig) != crypto.SignatureLength {
		return common.Address{}, fmt.Errorf("signature must be %d bytes, got %d", crypto.SignatureLength, len(sig))
	}
	s := make([]byte, len(sig))
	copy(s, sig)
	if s[64] >= 27 {
		s[64] -= 27
	}
	if s[64] > 1 {
		return common.Address{}, fmt.Errorf("signature recovery id must be 0, 1, 27 or 28, got %d", sig[64])
	}
	pub, err := crypto.SigToPub(digest, s)
	if err != nil {
		return common.Address{}, errors.New("signature does not recover to a public key")
	}
	return crypto.PubkeyToAddress(*pub), nil
}

// Challenges keeps issued challenges in Postgres (orderflow_challenges),
// each answerable once before it expires.
type Challenges struct {
	pool *pgxpool.Pool
}

// NewChallenges returns the store on pool.
func NewChallenges(pool *pgxpool.Pool) *Challenges { return &Challenges{pool: pool} }

// MaxChallengesPerAddress is how many unexpired challenges an address
// keeps: issuing one more drops the oldest, so asking for challenges of
// an address cannot grow the table past this, whoever asks.
const MaxChallengesPerAddress = 8

// Save stores c for later verification and drops the address's oldest
// challenges beyond MaxChallengesPerAddress.
func (s *Challenges) Save(ctx context.Context, c Challenge, expires time.Time) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO orderflow_challenges (nonce, address, expires_at) VALUES ($1, $2, $3)`,
			c.Message.Nonce, c.Message.Address, expires); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
			DELETE FROM orderflow_challenges WHERE nonce IN (
				SELECT nonce FROM orderflow_challenges WHERE address = $1
				ORDER BY expires_at DESC, nonce OFFSET $2)`, c.Message.Address, MaxChallengesPerAddress)
		return err
	})
	if err != nil {
		return fmt.Errorf("save challenge: %w", err)
	}
	return nil
}

// DeleteExpired removes the challenges that expired before now, used or
// not, and says how many there were.
func (s *Challenges) DeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM orderflow_challenges WHERE expires_at < $1`, now)
	if err != nil {
		return 0, fmt.Errorf("delete expired challenges: %w", err)
	}
	return tag.RowsAffected(), nil
}

// ErrChallenge is a nonce that is unknown, used, expired or not the
// address's.
var ErrChallenge = errors.New("challenge is unknown, used, expired or for another address")

// Use marks the challenge of nonce used by address and returns its expiry;
// a second use fails.
func (s *Challenges) Use(ctx context.Context, nonce, address string, now time.Time) (time.Time, error) {
	var expires time.Time
	err := s.pool.QueryRow(ctx, `
		UPDATE orderflow_challenges SET used_at = $3
		WHERE nonce = $1 AND address = $2 AND used_at IS NULL AND expires_at > $3
		RETURNING expires_at`, nonce, address, now).Scan(&expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, ErrChallenge
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("use challenge: %w", err)
	}
	return expires, nil
}
