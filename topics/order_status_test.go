package topics

import "testing"

// every status of docs/api.md "Values and identifiers", with its class.
var statusClasses = []struct {
	name   string
	status int
	live   bool
}{
	{"pending", OrderStatusPending, true},
	{"on book", OrderStatusOnBook, true},
	{"partially filled", OrderStatusPartiallyFilled, true},
	{"done", OrderStatusDone, false},
	{"cancelled by user", OrderStatusCancelledByUser, false},
	{"cancelled by system", OrderStatusCancelledBySys, false},
	{"expired", OrderStatusExpired, false},
	{"error", OrderStatusError, false},
}

func TestOrderStatusClasses(t *testing.T) {
	for _, c := range statusClasses {
		t.Run(c.name, func(t *testing.T) {
			if got := IsLiveOrderStatus(c.status); got != c.live {
				t.Errorf("IsLiveOrderStatus(%d) = %v, want %v", c.status, got, c.live)
			}
			if got := IsFinalOrderStatus(c.status); got == c.live {
				t.Errorf("IsFinalOrderStatus(%d) = %v, want %v", c.status, got, !c.live)
			}
		})
	}
	for _, unknown := range []int{-1, 2, 9, 15, 98, 100} {
		if IsLiveOrderStatus(unknown) || IsFinalOrderStatus(unknown) {
			t.Errorf("status %d is not a status, yet it has a class", unknown)
		}
	}
	if n := len(LiveOrderStatuses()) + len(FinalOrderStatuses()); n != len(statusClasses) {
		t.Errorf("the classes hold %d statuses, want %d", n, len(statusClasses))
	}
}

// The lists are the ones docs/api.md "Values and identifiers" writes and
// the schema's partial indexes use.
func TestOrderStatusLists(t *testing.T) {
	if got, want := LiveOrderStatusList(), "(0, 1, 13)"; got != want {
		t.Errorf("LiveOrderStatusList() = %q, want %q", got, want)
	}
	if got, want := FinalOrderStatusList(), "(10, 11, 12, 14, 99)"; got != want {
		t.Errorf("FinalOrderStatusList() = %q, want %q", got, want)
	}
}

func TestOrderStatusesAreCopies(t *testing.T) {
	LiveOrderStatuses()[0] = 99
	FinalOrderStatuses()[0] = 0
	if !IsLiveOrderStatus(OrderStatusPending) || IsFinalOrderStatus(OrderStatusPending) {
		t.Error("changing a returned list changed the classes")
	}
}
