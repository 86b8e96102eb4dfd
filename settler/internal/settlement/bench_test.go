package settlement_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/internal/feed"
	"blockspace.exchange/settler/internal/ledger"
	"blockspace.exchange/settler/internal/settlement"
	"blockspace.exchange/settler/internal/settlement/settlementtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

// benchSlot builds one slot's records: its opening, then trades between
// the seller's resting preconf asks and buyers' crossing bids (2 accepted,
// 1 fill, 2 filled per trade), then its close. It returns the records and
// the orders ingress writes.
func benchSlot(s *settlementtest.Stream, n uint64, users []settlementtest.Account, trades int) []*settlementtest.Order {
	seller := users[int(n)%len(users)]
	s.Open(n, seller, int64(trades)*1000, settlementtest.DefaultFees)
	var orders []*settlementtest.Order
	for i := range trades {
		buyer := users[(int(n)+1+i%(len(users)-1))%len(users)]
		price := "0.00000000" + strconv.Itoa(2+i%7)
		ask := s.Place(seller, topics.InclusionPreconf, n, false, topics.OrderTypeLimit, price, "1000")
		bid := s.Place(buyer, topics.InclusionPreconf, n, true, topics.OrderTypeLimit, price, "1000")
		s.Accept(ask, true)
		s.Accept(bid, false)
		s.Trade(bid, ask, price, 1000, 0)
		orders = append(orders, ask, bid)
	}
	s.Close(n)
	return orders
}

// BenchmarkSettleTrading settles the matcher's records as the settler's
// trading consumer does: batches of about 1,000 and 5,000 records (order
// events, fills, market.open, market.status), each in one transaction with
// its account feed and consumer offsets. It reports trading records and
// fills settled per second and the mean time of a batch's transaction,
// next to a plain loop of one-row INSERT statements measured in the same
// run.
func BenchmarkSettleTrading(b *testing.B) {
	for _, trades := range []int{200, 1000} {
		b.Run(fmt.Sprintf("records=%d", 5*trades), func(b *testing.B) { benchSettle(b, trades) })
	}
}

func benchSettle(b *testing.B, tradesPerBatch int) {
	pool := pgtest.New(b, schema.Migrations())
	ctx := context.Background()
	users := settlementtest.Fund(b, pool, 50, "1000")
	sys, err := ledger.LoadSystem(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	s := settlementtest.NewStream(time.Now())
	var elapsed time.Duration
	records, fills := 0, 0
	for i := 0; i < b.N; i++ {
		s.Records = s.Records[:0]
		orders := benchSlot(s, uint64(20_000_000+i), users, tradesPerBatch)
		settlementtest.InsertOrders(b, pool, orders...)
		batch := decode(b, s.Records)
		began := time.Now()
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			res, err := settlement.Apply(ctx, tx, sys, batch, quiet)
			if err != nil {
				return err
			}
			if res.Fills != tradesPerBatch || res.Released != 2*tradesPerBatch {
				return fmt.Errorf("batch settled %+v", res)
			}
			fills += res.Fills
			c := feed.Changes{Entries: res.Entries, Balances: res.Balances}
			for _, k := range res.Positions {
				c.Positions = append(c.Positions, feed.PositionKey{Account: k.Account, Instrument: k.Instrument})
			}
			if _, err := feed.Collect(ctx, tx, c); err != nil {
				return err
			}
			return ledger.StoreOffsets(ctx, tx, "bench", []ledger.Offset{{Topic: topics.Fills, Partition: 0, Next: int64(i + 1)}})
		})
		elapsed += time.Since(began)
		if err != nil {
			b.Fatal(err)
		}
		records += len(batch)
	}
	b.StopTimer()
	if _, err := pool.Exec(ctx, `CREATE TABLE bench_baseline (id bigint, v numeric)`); err != nil {
		b.Fatal(err)
	}
	const baseline = 2000
	bstart := time.Now()
	for i := range baseline {
		if _, err := pool.Exec(ctx, `INSERT INTO bench_baseline VALUES ($1, $2::numeric)`, i, "0.001"); err != nil {
			b.Fatal(err)
		}
	}
	plain := float64(baseline) / time.Since(bstart).Seconds()
	settled := float64(records) / elapsed.Seconds()
	b.ReportMetric(settled, "records/s")
	b.ReportMetric(float64(fills)/elapsed.Seconds(), "fills/s")
	b.ReportMetric(plain, "baseline-inserts/s")
	b.ReportMetric(settled/plain, "x-baseline")
	b.ReportMetric(float64(elapsed.Milliseconds())/float64(b.N), "ms/batch")
	if v, err := auditQuiescent(ctx, pool); err != nil || len(v) > 0 {
		b.Fatalf("audit: %v %v", v, err)
	}
}
