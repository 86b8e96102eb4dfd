package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"blockspace.exchange/matcher/internal/book"
	"blockspace.exchange/topics"
)

// randomStream returns n inputs over two slots: market opens, orders of
// every type from the seller and three traders, cancels of all kinds,
// republished duplicates, and the ticks of the first slot at the end.
func randomStream(t *testing.T, seed uint64, n int) []topics.Envelope {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	h := &harness{t: t}
	var envs []topics.Envelope
	add := func(cmd any) { envs = append(envs, h.envelope(cmd)) }
	slots := []uint64{testSlot, testSlot + 16}
	for _, s := range slots {
		add(marketOpen(s, topics.WholeBlock))
		add(marketOpen(s, topics.InclusionPreconf))
	}
	accounts := []int64{seller, alice, bob, 41}
	var nextOrder int64
	for len(envs) < n {
		s := slots[rng.IntN(len(slots))]
		wb := rng.IntN(4) == 0
		instrument := topics.InstrumentID(topics.InclusionPreconf, s)
		qty, price := fmt.Sprint(21000+1000*rng.IntN(80)), fmt.Sprintf("0.00000000%d", 1+rng.IntN(9))
		if wb {
			instrument, qty, price = topics.InstrumentID(topics.WholeBlock, s), "1", fmt.Sprintf("%d.%02d", rng.IntN(3), 1+rng.IntN(99))
		}
		acct := accounts[rng.IntN(len(accounts))]
		switch r := rng.IntN(100); {
		case r < 60:
			nextOrder++
			o := buy(nextOrder, acct, instrument, qty, price)
			o.Side = rng.IntN(2) == 0
			o.OrderType = 1 + rng.IntN(3)
			o.Passive = o.OrderType == topics.OrderTypeLimit && rng.IntN(5) == 0
			if o.OrderType == topics.OrderTypeMarket && rng.IntN(2) == 0 {
				o.Price = ""
			}
			if rng.IntN(3) == 0 {
				o.ClientOrderID = fmt.Sprintf("c%d", rng.IntN(5))
			}
			add(o)
		case r < 75:
			add(topics.OrderCancel{UserID: userOf(acct), AccountID: acct, InstrumentID: instrument, OrderID: 1 + rng.Int64N(nextOrder+1)})
		case r < 82:
			add(topics.OrderCancelBatch{UserID: userOf(acct), AccountID: acct, InstrumentID: instrument,
				OrderIDs: []int64{1 + rng.Int64N(nextOrder+1), 1 + rng.Int64N(nextOrder+1)}, ClientOrderIDs: []string{"c1"}})
		case r < 85:
			add(topics.OrderCancelAll{UserID: userOf(acct), AccountID: acct, InstrumentID: instrument})
		default:
			envs = append(envs, envs[rng.IntN(len(envs))]) // a republished command
		}
	}
	for _, k := range []topics.TickKind{topics.TickTradingClosed, topics.TickSubmissionClosed} {
		add(topics.ClockTick{Slot: testSlot, Kind: k})
	}
	return envs
}

// applyAll returns the encoded outputs of envs, one record value per line.
func applyAll(t *testing.T, e *Engine, envs []topics.Envelope) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, env := range envs {
		outs, err := e.Apply(env)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			b, err := topics.Encode(o.Envelope)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(o.Value, b) {
				t.Fatalf("output value %s differs from its envelope's encoding %s", o.Value, b)
			}
			fmt.Fprintf(&buf, "%s %d %s\n", o.Topic, o.Slot, b)
		}
	}
	return buf.Bytes()
}

func TestReplayIsByteIdentical(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		envs := randomStream(t, seed, 3000)
		first := applyAll(t, New(), envs)

		// The same inputs as a consumer sees them: encoded, then decoded.
		decoded := make([]topics.Envelope, len(envs))
		for i, env := range envs {
			b, err := topics.Encode(env)
			if err != nil {
				t.Fatal(err)
			}
			if decoded[i], err = topics.Decode(b); err != nil {
				t.Fatal(err)
			}
		}
		second := applyAll(t, New(), decoded)
		if !bytes.Equal(first, second) {
			t.Fatalf("seed %d: replay differs at byte %d", seed, firstDiff(first, second))
		}
		if bytes.Count(first, []byte(topics.TypeTradeExecuted)) < 50 {
			t.Fatalf("seed %d: the stream traded too little to test anything", seed)
		}
	}
}

// Positions move, they are never created or lost: per slot the whole block
// is one unit and the preconf gas is the slot's total, and nothing stays
// locked once every order is gone.
func TestPositionsAreConserved(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		e := New()
		applyAll(t, e, randomStream(t, seed, 3000))
		for _, n := range []uint64{testSlot, testSlot + 16} {
			s := e.slots[n]
			var sums, locked [families]int64
			for k, p := range s.positions {
				if p.qty < 0 || p.locked < 0 || p.locked > p.qty {
					t.Fatalf("seed %d slot %d: position %+v of %+v", seed, n, *p, k)
				}
				sums[k.family] += p.qty
				locked[k.family] += p.locked
			}
			if sums[wholeBlock] != 1 || sums[inclusionPreconf] != testPreconf {
				t.Fatalf("seed %d slot %d: positions sum to %v", seed, n, sums)
			}
			var want [families]int64
			if n != testSlot { // slot testSlot closed: its orders expired
				for _, m := range s.markets {
					m.book.Walk(func(o book.Order) bool {
						if o.Side == book.Sell {
							want[familyOf(m.family)] += o.Qty
						}
						return true
					})
				}
			}
			if locked != want {
				t.Fatalf("seed %d slot %d: locked %v, resting sells %v", seed, n, locked, want)
			}
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
