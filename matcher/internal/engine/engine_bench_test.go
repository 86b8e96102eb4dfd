package engine

import (
	"fmt"
	"testing"
	"time"

	"blockspace.exchange/topics"
)

// BenchmarkApply measures commands/s through the engine from record bytes
// to encoded outputs (ApplyRecord), on one core. The mix per slot, after
// its market.open: place commands of a seller and a buyer alternating over
// nine prices with quantities of one to seven steps, so about half of them
// trade against one or more resting orders; every tenth place is followed
// by a republished duplicate and a cancel of an earlier order; the
// trading_closed tick expires what rests at the end. It reports commands/s
// and outputs per command.
func BenchmarkApply(b *testing.B) {
	values := benchStream(b, 16, 2500)
	b.ResetTimer()
	var outputs int
	for range b.N {
		e := New()
		for _, v := range values {
			outs, err := e.ApplyRecord(v)
			if err != nil {
				b.Fatal(err)
			}
			outputs += len(outs)
		}
	}
	n := float64(b.N * len(values))
	b.ReportMetric(n/b.Elapsed().Seconds(), "commands/s")
	b.ReportMetric(float64(outputs)/n, "outputs/command")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/command")
}

// benchStream returns the encoded records of the mix above.
func benchStream(b *testing.B, slots, perSlot int) [][]byte {
	b.Helper()
	at := time.UnixMilli(testTimeStart)
	var values [][]byte
	add := func(e topics.Envelope, err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
		v, err := topics.Encode(e)
		if err != nil {
			b.Fatal(err)
		}
		values = append(values, v)
	}
	for s := range slots {
		m := marketOpen(uint64(1000+s), topics.InclusionPreconf)
		m.TotalPreconf, m.MaxQuantity, m.MinQuantity = 1_000_000_000, "1000000", "1000"
		add(m.Envelope(at))
	}
	id := int64(0)
	for i := range perSlot {
		for s := range slots {
			id++
			o := buy(id, alice, topics.InstrumentID(topics.InclusionPreconf, uint64(1000+s)), fmt.Sprint(1000*(1+i%7)), fmt.Sprintf("0.00000000%d", 1+i%9))
			if i%2 == 0 {
				o.UserID, o.AccountID, o.Side = 1, seller, false
			}
			cmd := fmt.Sprintf("cmd-%d-%d", s, i)
			add(topics.OrderCommandEnvelope(topics.TypeOrderPlace, cmd, at, o))
			if i%10 == 9 {
				values = append(values, values[len(values)-1])
				add(topics.OrderCommandEnvelope(topics.TypeOrderCancel, cmd+"-c", at,
					topics.OrderCancel{UserID: o.UserID, AccountID: o.AccountID, InstrumentID: o.InstrumentID, OrderID: id - 2}))
			}
		}
	}
	for s := range slots {
		add(topics.ClockTick{Slot: uint64(1000 + s), Kind: topics.TickTradingClosed}.Envelope(at))
	}
	return values
}
