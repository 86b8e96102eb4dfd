package ingress

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/ingress/internal/beacon"
	"blockspace.exchange/ingress/internal/clock"
	"blockspace.exchange/ingress/internal/login"
	"blockspace.exchange/ingress/internal/validators"
	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// MarketParams are the parameters the slot clock puts into every
// market.open (docs/markets.md).
type MarketParams = clock.Params

// DefaultMarketParams returns the documented defaults.
func DefaultMarketParams() MarketParams { return clock.DefaultParams() }

// MarketParamsFromEnv reads MARKET_TOTAL_GAS and MARKET_TOTAL_PRECONF over
// the defaults.
func MarketParamsFromEnv(r *config.Reader) MarketParams {
	p := clock.DefaultParams()
	p.TotalGas = int64(r.Int("MARKET_TOTAL_GAS", int(p.TotalGas), 21_000, 1<<40))
	p.TotalPreconf = int64(r.Int("MARKET_TOTAL_PRECONF", int(p.TotalPreconf), 0, 1<<40))
	p.MaxQuantity = min(p.MaxQuantity, max(p.TotalPreconf, p.MinQuantity))
	if err := p.Validate(); err != nil {
		r.Fail("MARKET_TOTAL_GAS/MARKET_TOTAL_PRECONF: %v", err)
	}
	return p
}

// Beacon is the beacon chain as the exchange sees it: proposer duties and
// known validators. NewBeaconClient reaches a beacon node; NewDevBeacon is
// the dev stack's stand-in.
type Beacon interface {
	validators.Duties
	validators.Beacon
}

// NewBeaconClient returns a client of the beacon node at url (BEACON_URL).
func NewBeaconClient(url string, timeout time.Duration) (Beacon, error) {
	return beacon.NewClient(url, timeout)
}

// NewDevBeacon returns the dev beacon: every key is a validator, and each
// epoch's slots go round-robin to the registered validators.
func NewDevBeacon(pool *pgxpool.Pool) Beacon { return beacon.NewDev(pool) }

// ServeValidators mounts the validator routes (register, verify/batch,
// deregister) on the ingress, checking keys against b. Registration
// changes are published on the validators topic through the outbox, so
// the service needs Kafka.
func (s *Service) ServeValidators(pool *pgxpool.Pool, b Beacon, dbErr func() error, log *slog.Logger) error {
	if s.outbox == nil {
		return errors.New("ingress: validator routes need Kafka for their records")
	}
	validators.New(s.cfg.Environment.ChainID, pool, b, s.outbox, log).
		Register(s.engine, auth.Bearer(s.verifier), httpx.Needs("postgres", dbErr))
	return nil
}

// Clock is a running slot clock.
type Clock struct{ c *clock.Clock }

// NewClock returns the slot clock of env (genesis and slot length set).
// It publishes on kcl and finds the seller of each slot from b's proposer
// duties and the validators registered in pool.
func NewClock(env environment.Environment, params MarketParams, pool *pgxpool.Pool, b Beacon, kcl *kgo.Client, log *slog.Logger) (*Clock, error) {
	c, err := clock.New(clock.Config{
		Env: env, Params: params, Logger: log,
		Layout: func(ctx context.Context) (topics.SlotLayout, error) { return kafka.Layout(ctx, kcl, topics.Orders) },
	}, validators.NewSellers(pool, b), kcl)
	if err != nil {
		return nil, err
	}
	return &Clock{c: c}, nil
}

// Run publishes ticks until ctx ends.
func (c *Clock) Run(ctx context.Context) error { return c.c.Run(ctx) }

// RegisterDevValidator makes sure the user of address exists and has the
// validator of the BLS key derived from seed registered, signed the way a
// client signs (docs/validators.md). It returns the validator's public
// key. The dev stack uses it for its demo validator.
func RegisterDevValidator(ctx context.Context, pool *pgxpool.Pool, chainID int64, address string, seed []byte) (string, error) {
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
	reg := topics.ValidatorRegistered{Pubkey: pubkey, UserID: userID, Address: address, ValidatorIndex: beacon.DevIndex(pubkey)}
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

// Advance publishes every event due up to now. Run calls it as time
// passes; tests drive clocks through chosen instants with it.
func (c *Clock) Advance(ctx context.Context, now time.Time) error { return c.c.Advance(ctx, now) }
