package topics

import (
	"strconv"
	"strings"
)

// Order status values (docs/api.md "Values and identifiers").
const (
	OrderStatusPending         = 0
	OrderStatusOnBook          = 1
	OrderStatusDone            = 10
	OrderStatusCancelledByUser = 11
	OrderStatusCancelledBySys  = 12
	OrderStatusPartiallyFilled = 13
	OrderStatusExpired         = 14
	OrderStatusError           = 99
)

// liveOrderStatuses and finalOrderStatuses are the one place the two
// classes of order statuses are written (docs/api.md "Values and
// identifiers"): a live order may still trade or be cancelled, a final
// order never changes again, and every status is in one class. Every
// check, every SQL list and the test of the schema's partial indexes
// derive from them.
func liveOrderStatuses() [3]int {
	return [...]int{OrderStatusPending, OrderStatusOnBook, OrderStatusPartiallyFilled}
}

func finalOrderStatuses() [5]int {
	return [...]int{OrderStatusDone, OrderStatusCancelledByUser, OrderStatusCancelledBySys,
		OrderStatusExpired, OrderStatusError}
}

// LiveOrderStatuses returns the live statuses: pending, on the book,
// partially filled.
func LiveOrderStatuses() []int {
	l := liveOrderStatuses()
	return l[:]
}

// FinalOrderStatuses returns the final statuses: done, cancelled by the
// owner or the system, expired, error.
func FinalOrderStatuses() []int {
	f := finalOrderStatuses()
	return f[:]
}

// IsLiveOrderStatus reports whether an order in this status may still
// trade or be cancelled.
func IsLiveOrderStatus(status int) bool {
	for _, s := range liveOrderStatuses() {
		if s == status {
			return true
		}
	}
	return false
}

// IsFinalOrderStatus reports whether an order in this status is over:
// nothing changes it any more.
func IsFinalOrderStatus(status int) bool {
	for _, s := range finalOrderStatuses() {
		if s == status {
			return true
		}
	}
	return false
}

// LiveOrderStatusList returns the live statuses as a parenthesised list,
// "(0, 1, 13)": the literal of an SQL IN. Queries write it into their text
// rather than passing it as a parameter, so that the planner can use the
// partial indexes whose predicate is this same list (orders_live,
// orders_account_live in settler/schema/migrations).
func LiveOrderStatusList() string {
	return statusList(LiveOrderStatuses())
}

// FinalOrderStatusList returns the final statuses as a parenthesised list,
// "(10, 11, 12, 14, 99)", like LiveOrderStatusList.
func FinalOrderStatusList() string {
	return statusList(FinalOrderStatuses())
}

func statusList(statuses []int) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, s := range statuses {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(s))
	}
	b.WriteByte(')')
	return b.String()
}
