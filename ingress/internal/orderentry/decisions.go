package orderentry

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/shopspring/decimal"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// decisions hands the matcher's decisions about the orders and cancels of
// this process to the requests that wait for them (docs/api.md "The
// matcher's decision in the answer"). It watches `order-events` through
// the market catalog's feed, which every ingress instance reads whole and
// read_committed, so it sees only what the matcher committed.
//
// The matcher handles a command in one Kafka transaction, and all events
// of one command go to the partition of its slot. A decision is therefore
// complete once a control record (the transaction's commit marker) follows
// its events on that partition: the order's state after the command, with
// every fill of it, is known.
type decisions struct {
	mu      sync.Mutex
	orders  map[int64]*decision  // by orderId
	cancels map[string]*decision // by cancel command id
	// open lists, per order-events partition, the decisions that got
	// events and wait for the commit marker that seals them.
	open map[int32][]*decision
}

// decision is what the matcher decided about one order, or about the
// orders one cancel command named.
type decision struct {
	key       string        // the cancel command's id
	done      chan struct{} // closed when sealed
	events    bool          // an event arrived
	partition int32         // of order-events, once an event arrived
	sealed    bool
	at        int64 // envelope time of the last event, epoch ms

	// For a place: the order after its last event, and its fills.
	state   topics.OrderEvent
	fees    decimal.Decimal
	value   decimal.Decimal // Σ price × quantity of the fills
	preconf decimal.Decimal // whole block: preconf gas that came with it
	traded  bool

	// For a cancel: the code of each named order, by orderId and by
	// clientOrderId (1 cancelled; 108, 109 refused), with the message.
	cancelled map[int64]cancelOutcome
	byClient  map[string]cancelOutcome
}

// cancelOutcome is the matcher's answer to a cancel of one order.
type cancelOutcome struct {
	code    int
	message string
}

func newDecisions() *decisions {
	return &decisions{orders: map[int64]*decision{}, cancels: map[string]*decision{}, open: map[int32][]*decision{}}
}

func newDecision() *decision { return &decision{done: make(chan struct{})} }

// decided reports whether dec is sealed; only then may its fields be
// read, and they no longer change.
func (dec *decision) decided() bool {
	if dec == nil {
		return false
	}
	select {
	case <-dec.done:
		return true
	default:
		return false
	}
}

// expectOrders registers the orders about to be published, before they
// are: the matcher may answer before the publish returns.
func (d *decisions) expectOrders(orders []*order) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, o := range orders {
		if o.code == 0 && o.id != 0 {
			o.decision = newDecision()
			d.orders[o.id] = o.decision
		}
	}
}

// expectCancel registers a cancel command about to be published.
func (d *decisions) expectCancel(commandID string) *decision {
	dec := newDecision()
	dec.key, dec.cancelled, dec.byClient = commandID, map[int64]cancelOutcome{}, map[string]cancelOutcome{}
	d.mu.Lock()
	d.cancels[commandID] = dec
	d.mu.Unlock()
	return dec
}

// forgetOrders and forgetCancel drop registrations once their request is
// answered, decided or not.
func (d *decisions) forgetOrders(orders []*order) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, o := range orders {
		if o.decision != nil {
			delete(d.orders, o.id)
			d.unopen(o.decision)
		}
	}
}

func (d *decisions) forgetCancels(decs []*decision) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dec := range decs {
		delete(d.cancels, dec.key)
		d.unopen(dec)
	}
}

// unopen drops a decision that is still waiting for its commit marker,
// so that one never marked (a producer writing outside transactions)
// does not stay; the caller holds mu.
func (d *decisions) unopen(dec *decision) {
	if !dec.events || dec.sealed {
		return
	}
	open := d.open[dec.partition]
	if i := slices.Index(open, dec); i >= 0 {
		d.open[dec.partition] = slices.Delete(open, i, i+1)
	}
}

// await waits until every decision is sealed or wait has passed, and
// reports whether all were sealed. A caller reads a decision only after
// await, and only when it is sealed.
func await(ctx context.Context, wait time.Duration, decs []*decision) bool {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for _, dec := range decs {
		select {
		case <-dec.done:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// observe is the feed's tap: every record of the topics it reads,
// control records included.
func (d *decisions) observe(r *kgo.Record) {
	if r.Topic != topics.OrderEvents {
		return
	}
	if r.Attrs.IsControl() {
		d.seal(r.Partition)
		return
	}
	typ, _, ok := kafka.RecordType(r)
	if !ok || !decisive(typ) {
		return
	}
	d.mu.Lock()
	idle := len(d.orders) == 0 && len(d.cancels) == 0
	d.mu.Unlock()
	if idle {
		return
	}
	e, err := kafka.DecodeRecord(r)
	if err != nil {
		return // the catalog feed logs what it cannot decode
	}
	if typ == topics.TypeCancelRejected {
		var cr topics.CancelRejected
		if e.UnmarshalData(&cr) == nil {
			d.cancelRejected(r.Partition, e.Time, cr)
		}
		return
	}
	var ev topics.OrderEvent
	if e.UnmarshalData(&ev) == nil {
		d.orderEvent(r.Partition, e.Time, typ, ev)
	}
}

// decisive reports the event types that decide an order or a cancel.
func decisive(typ string) bool {
	switch typ {
	case topics.TypeOrderAccepted, topics.TypeOrderRejected, topics.TypeOrderFilled,
		topics.TypeOrderCancelled, topics.TypeOrderExpired, topics.TypeCancelRejected:
		return true
	}
	return false
}

func (d *decisions) orderEvent(partition int32, at int64, typ string, ev topics.OrderEvent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if dec := d.orders[ev.OrderID]; dec != nil && !dec.sealed {
		dec.state = ev
		if typ == topics.TypeOrderFilled {
			price, err1 := decimal.NewFromString(ev.LastPrice)
			qty, err2 := decimal.NewFromString(ev.LastQuantity)
			fee, err3 := decimal.NewFromString(ev.LastFee)
			if err1 == nil && err2 == nil && err3 == nil {
				dec.value = dec.value.Add(price.Mul(qty))
				dec.fees = dec.fees.Add(fee)
				dec.traded = true
			}
			if gas, err := decimal.NewFromString(ev.LastPreconfQuantity); err == nil {
				dec.preconf = dec.preconf.Add(gas)
			}
		}
		d.touch(partition, dec, at)
	}
	if typ == topics.TypeOrderCancelled {
		if dec := d.cancels[ev.CommandID]; dec != nil && !dec.sealed {
			dec.cancelled[ev.OrderID] = cancelOutcome{code: topics.CodeCancelled}
			d.touch(partition, dec, at)
		}
	}
}

func (d *decisions) cancelRejected(partition int32, at int64, cr topics.CancelRejected) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dec := d.cancels[cr.CommandID]
	if dec == nil || dec.sealed {
		return
	}
	out := cancelOutcome{code: cr.Code, message: cr.Message}
	if cr.OrderID != 0 {
		dec.cancelled[cr.OrderID] = out
	} else {
		dec.byClient[cr.ClientOrderID] = out
	}
	d.touch(partition, dec, at)
}

// touch notes an event of dec on partition; the caller holds mu.
func (d *decisions) touch(partition int32, dec *decision, at int64) {
	dec.at = at
	if !dec.events {
		dec.events, dec.partition = true, partition
		d.open[partition] = append(d.open[partition], dec)
	}
}

// seal completes the decisions whose events a commit marker on partition
// follows.
func (d *decisions) seal(partition int32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dec := range d.open[partition] {
		dec.sealed = true
		close(dec.done)
	}
	delete(d.open, partition)
}
