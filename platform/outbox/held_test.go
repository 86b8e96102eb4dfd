package outbox

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/topics"
)

// TestRelayLeavesRowsItsClientHolds publishes a command while the broker
// is dead: the client keeps the record, the caller is told it was not
// acknowledged, and the row stays. The relay of the same outbox leaves the
// row alone while the broker is dead (a copy would reach the topic besides
// the record the client delivers later); once the broker is back the
// client delivers the record, the row is deleted, and the topic holds the
// command once.
func TestRelayLeavesRowsItsClientHolds(t *testing.T) {
	t.Parallel() // a broker of its own, killed: beside the tests on the shared one
	ctx := t.Context()
	pool := pgtest.New(t, migrations())
	b := kafkatest.StartBroker(t)
	cl := b.Client(t)
	e, err := topics.FundingEnvelope(topics.TypeLedgerTransfer, "transfer-1", time.Now(), topics.LedgerTransfer{TransferID: 1})
	if err != nil {
		t.Fatal(err)
	}
	r, err := kafka.NewRecord(topics.LedgerCommands, topics.UserKey(3), e)
	if err != nil {
		t.Fatal(err)
	}
	o := New(pool, cl, slog.New(slog.DiscardHandler))
	o.PublishTimeout, o.RelayAge = 300*time.Millisecond, 0
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { o.Run(runCtx, time.Hour); close(done) }()
	defer func() { stop(); <-done }()
	if err := b.Node().Kill(); err != nil {
		t.Fatal(err)
	}

	var p Pending
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		p, err = Enqueue(ctx, tx, r)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	o.Publish(ctx, []Pending{p})
	if n := rows(t, pool); n != 1 {
		t.Fatalf("%d outbox rows after a publish to a dead broker, want 1", n)
	}
	for range 3 {
		if n, err := o.RelayOnce(ctx, 10); n != 0 || err != nil {
			t.Fatalf("relay round while the client holds the record: %d rows, %v; want it to leave the row alone", n, err)
		}
	}

	if err := b.Node().Start(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the row of the delivered command to be deleted", func() bool { return rows(t, pool) == 0 })
	if n, err := o.RelayOnce(ctx, 10); n != 0 || err != nil {
		t.Fatalf("relay round after delivery: %d rows, %v", n, err)
	}
	if got := kafkatest.ReadToEnd(ctx, t, cl, topics.LedgerCommands); len(got) != 1 {
		t.Fatalf("%d records on %s, want the command once", len(got), topics.LedgerCommands)
	}
}

// rows counts the outbox's rows.
func rows(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
