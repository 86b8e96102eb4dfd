package ingress

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/ingress/internal/beacon"
	"blockspace.exchange/ingress/internal/clock"
	"blockspace.exchange/ingress/internal/validators"
	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// Beacon is the beacon chain as the exchange sees it: proposer duties and
// known validators. NewBeaconClient reaches a beacon node; the dev stack
// has a stand-in (ingress/devkit).
type Beacon interface {
	validators.Duties
	validators.Beacon
}

// NewBeaconClient returns a client of the beacon node at url (BEACON_URL).
func NewBeaconClient(url string, timeout time.Duration) (Beacon, error) {
	return beacon.NewClient(url, timeout)
}

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

// NewClock returns the slot clock of env (genesis and slot length set),
// opening markets with the parameters of m. It publishes on kcl and finds
// the seller of each slot from b's proposer duties and the validators
// registered in pool.
func NewClock(env environment.Environment, m MarketsConfig, pool *pgxpool.Pool, b Beacon, kcl *kgo.Client, log *slog.Logger) (*Clock, error) {
	params, err := m.params()
	if err != nil {
		return nil, err
	}
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

// Advance publishes every event due up to now. Run calls it as time
// passes; tests drive clocks through chosen instants with it.
func (c *Clock) Advance(ctx context.Context, now time.Time) error { return c.c.Advance(ctx, now) }
