package schema

import (
	"io/fs"
	"regexp"
	"testing"

	"blockspace.exchange/topics"
)

// orderStatusIndex matches a partial index of the orders table whose
// predicate is a list of statuses.
var orderStatusIndex = regexp.MustCompile(`CREATE INDEX (\w+) ON orders \([^)]*\)\s+WHERE status IN (\([^)]*\))`)

// The partial indexes of the live orders repeat topics.LiveOrderStatusList
// in SQL, which cannot import it; the readers' queries name the same list
// (docs/architecture.md "Order statuses"), and Postgres uses such an index
// only when the query's list is the index's own.
func TestOrderIndexesUseLiveStatuses(t *testing.T) {
	want := map[string]string{
		"orders_live":         topics.LiveOrderStatusList(),
		"orders_account_live": topics.LiveOrderStatusList(),
	}
	got := orderStatusIndexes(t)
	for name, list := range want {
		if got[name] != list {
			t.Errorf("index %s: status IN %s, want %s", name, got[name], list)
		}
	}
	for name, list := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("index %s: status IN %s is a list this test does not know; add it to want", name, list)
		}
	}
}

// orderStatusIndexes returns the status list of every partial index of the
// orders table, by index name.
func orderStatusIndexes(t *testing.T) map[string]string {
	t.Helper()
	files, err := fs.Glob(Migrations(), "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	lists := make(map[string]string)
	for _, name := range files {
		sql, err := fs.ReadFile(Migrations(), name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range orderStatusIndex.FindAllStringSubmatch(string(sql), -1) {
			lists[m[1]] = m[2]
		}
	}
	return lists
}
