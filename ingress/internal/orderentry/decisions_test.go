package orderentry

import (
	"testing"

	"blockspace.exchange/topics"
)

// A decision is sealed only by a commit marker after its events, and a
// forgotten one leaves nothing behind, marked or not.
func TestDecisionsSealOnTheCommitMarker(t *testing.T) {
	d := newDecisions()
	sealed, unmarked := &order{id: 7}, &order{id: 8}
	d.expectOrders([]*order{sealed, unmarked})
	d.orderEvent(3, 1000, topics.TypeOrderAccepted, topics.OrderEvent{OrderID: 7, Status: topics.OrderStatusOnBook})
	d.orderEvent(5, 1001, topics.TypeOrderAccepted, topics.OrderEvent{OrderID: 8, Status: topics.OrderStatusOnBook})
	if sealed.decision.decided() {
		t.Fatal("decided before the commit marker")
	}
	d.seal(4) // another partition's marker
	if sealed.decision.decided() {
		t.Fatal("decided by another partition's commit marker")
	}
	d.seal(3)
	if !sealed.decision.decided() || sealed.decision.state.Status != topics.OrderStatusOnBook || sealed.decision.at != 1000 {
		t.Fatalf("decision %+v", sealed.decision)
	}
	d.forgetOrders([]*order{sealed, unmarked})
	if len(d.orders) != 0 || len(d.open[5]) != 0 || len(d.open[3]) != 0 {
		t.Fatalf("left behind: orders %v, open %v", d.orders, d.open)
	}
}
