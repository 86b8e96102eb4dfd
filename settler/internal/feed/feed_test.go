package feed_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/internal/feed"
	"blockspace.exchange/settler/internal/ledger"
	"blockspace.exchange/settler/internal/settlement/settlementtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

func TestMain(m *testing.M) { pgtest.Main(m, kafkatest.StopShared) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// read returns every record of account-events, by envelope id.
func read(t *testing.T, brokers []string, want int) map[string]topics.Envelope {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{Brokers: brokers, ClientID: "feed-reader"},
		kgo.ConsumeTopics(topics.AccountEvents), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out := map[string]topics.Envelope{}
	for n := 0; n < want; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d account events", n, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			e, err := kafka.DecodeRecord(r)
			if err != nil {
				t.Fatal(err)
			}
			if prev, seen := out[e.ID]; seen && string(prev.Data) != string(e.Data) {
				t.Errorf("%s published twice with different data:\n%s\n%s", e.ID, prev.Data, e.Data)
			}
			out[e.ID] = e
			n++
		})
	}
	return out
}

// collect stores the feed of a transfer between a user's accounts.
func collect(t *testing.T, pool *pgxpool.Pool) *feed.Batch {
	t.Helper()
	ctx := context.Background()
	sys, err := ledger.LoadSystem(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	var b *feed.Batch
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		res, err := ledger.Apply(ctx, tx, sys, []ledger.Command{{ID: "d1", Type: topics.TypeDepositObserved, At: time.UnixMilli(1_700_000_000_000),
			Deposit: &topics.DepositObserved{ChainID: 1337, BlockHash: "0xb", TransactionHash: "0x1", Sender: "0x00000000000000000000000000000000000a11ce",
				Depositor: "0x00000000000000000000000000000000000a11ce", TokenID: 1, Quantity: "2.5", AmountWei: "1"}}}, nil)
		if err != nil {
			return err
		}
		b, err = feed.Collect(ctx, tx, feed.Changes{Entries: res.Entries})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCollectedFeedIsPublishedOnce publishes a batch through the queue:
// the records carry the posting and the balance after it, and the row is
// gone once Kafka acknowledged them.
func TestCollectedFeedIsPublishedOnce(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	cl, brokers := kafkatest.Start(t)
	b := collect(t, pool)
	if b == nil || len(b.Balances) != 1 || b.Balances[0].Version != b.Version {
		t.Fatalf("batch %+v", b)
	}
	p := feed.NewPublisher(pool, cl, quiet, 4)
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	p.Publish(b)
	got := read(t, brokers, 2)
	post, err := topics.DecodeTransactionPosted(got[postingID(t, pool)])
	if err != nil || post.Amount != "2.5" || post.Balance != "2.5" || post.Type != ledger.TypeDeposit || post.CreateDate != 1_700_000_000_000 {
		t.Fatalf("posting %+v %v", post, err)
	}
	bal, err := topics.DecodeBalanceChanged(got[b.Balances[0].ID()])
	if err != nil || bal.Quantity != "2.5" || bal.Locked != "0" || bal.Available != "2.5" || bal.UserID != post.UserID {
		t.Fatalf("balance %+v %v", bal, err)
	}
	waitEmpty(t, pool)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestRelayPublishesWhatACrashLeft: a batch committed but never handed
// to a publisher (the settler died after the commit) is published by the
// relay with the same ids and content.
func TestRelayPublishesWhatACrashLeft(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	cl, brokers := kafkatest.Start(t)
	b := collect(t, pool)
	p := feed.NewPublisher(pool, cl, quiet, 4)
	if n, err := p.RelayOnce(t.Context(), 10); err != nil || n != 0 {
		t.Fatalf("relayed a young row: %d %v", n, err)
	}
	p.RelayAge = 0
	if n, err := p.RelayOnce(t.Context(), 10); err != nil || n != 1 {
		t.Fatalf("relay: %d %v", n, err)
	}
	want, err := b.Records()
	if err != nil {
		t.Fatal(err)
	}
	got := read(t, brokers, len(want)+1)
	if _, ok := got[postingID(t, pool)]; !ok {
		t.Errorf("the relay did not publish the posting: %v", got)
	}
	for _, r := range want {
		e, err := kafka.DecodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		if g, ok := got[e.ID]; !ok || string(g.Data) != string(e.Data) || g.Time != e.Time {
			t.Errorf("relayed %s as %+v, published would be %+v", e.ID, g, e)
		}
	}
	waitEmpty(t, pool)
}

// TestPositionsInTheFeed: a fill's batch publishes both sides' positions.
func TestPositionsInTheFeed(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	users := settlementtest.Fund(t, pool, 2, "1")
	if _, err := pool.Exec(t.Context(), `INSERT INTO positions (account_id, instrument_id, market_id, slot, quantity, locked, average_price)
		VALUES ($1, 'ETH-PC-7', 1000000000007, 7, 100, 40, 0.000000002), ($2, 'ETH-PC-7', 1000000000007, 7, 5, 0, NULL)`,
		users[0].Account, users[1].Account); err != nil {
		t.Fatal(err)
	}
	var b *feed.Batch
	err := pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		var err error
		b, err = feed.Collect(t.Context(), tx, feed.Changes{Positions: []feed.PositionKey{{Account: users[0].Account, Instrument: "ETH-PC-7"},
			{Account: users[1].Account, Instrument: "ETH-PC-7"}}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Positions) != 2 {
		t.Fatalf("positions %+v", b.Positions)
	}
	p := b.Positions[0]
	if p.UserID != users[0].User || p.Quantity != "100" || p.Locked != "40" || p.Available != "60" || p.AveragePrice != "0.000000002" ||
		p.MarketID != 1_000_000_000_007 || p.Slot != 7 || p.Version != b.Version {
		t.Fatalf("position %+v", p)
	}
	if b.Positions[1].AveragePrice != "" {
		t.Fatalf("position without purchases has average %q", b.Positions[1].AveragePrice)
	}
}

// postingID is the envelope id of the one posting on a user account.
func postingID(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var id int64
	if err := pool.QueryRow(t.Context(), `SELECT p.posting_id FROM postings p JOIN accounts a USING (account_id) WHERE a.user_id IS NOT NULL`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return topics.TransactionPosted{TrxID: id}.ID()
}

func waitEmpty(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	var n int
	poll.Before(t, "account_feed to be empty after publishing", time.Now().Add(poll.Timeout), func() bool {
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM account_feed`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	}, func() string { return fmt.Sprintf("%d rows", n) })
}
