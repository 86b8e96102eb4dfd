package devstack

import (
	"bufio"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"blockspace.exchange/deploy/monitoring"
	"blockspace.exchange/platform/poll"
)

// Every metric the dashboard draws and the alerts watch is one the
// services export: a query of a misspelt or removed metric draws an empty
// panel and an alert that never fires, and nothing else would tell.
func TestDashboardAndAlertsQueryExportedMetrics(t *testing.T) {
	t.Parallel()
	s := startStack(t, worldTempDir(t))
	a := s.Addresses()
	// Series labelled by route and method appear with their first request.
	if r := call(t, "GET", a.REST+"/api/v1/p/tokens"); r.status != 200 {
		t.Fatalf("GET tokens: %d", r.status)
	}
	if status, _ := postJSON(t, a.Orderflow.Originator+"/v1", rpc("eth_sendRawTransaction", "0x00"), nil); status != 200 {
		t.Fatalf("eth_sendRawTransaction: HTTP %d", status)
	}
	queriedMetricsExported(t, a.Admin)
}

// queriedMetricsExported waits until the metrics the dashboard and the
// alerts query are all on the admin addresses' /metrics, together.
func queriedMetricsExported(t *testing.T, admins ...string) {
	t.Helper()
	dash, err := monitoring.DashboardQueries()
	if err != nil {
		t.Fatal(err)
	}
	alerts, err := monitoring.AlertQueries()
	if err != nil {
		t.Fatal(err)
	}
	queried := monitoring.Queried(append(dash, alerts...))
	var missing []string
	poll.Before(t, "every metric the dashboard and the alerts query on /metrics", time.Now().Add(poll.Timeout), func() bool {
		exported := map[string]bool{}
		for _, admin := range admins {
			for name := range scrapeNames(t, admin+"/metrics") {
				exported[name] = true
			}
		}
		missing = missing[:0]
		for name, where := range queried {
			if !exported[name] {
				missing = append(missing, name+" ("+strings.Join(where, "; ")+")")
			}
		}
		sort.Strings(missing)
		return len(missing) == 0
	}, func() string { return "not exported:\n" + strings.Join(missing, "\n") })
}

// On the production shape the metrics come from the service binaries, each
// wired by its own main: the processes together export every metric the
// dashboard and the alerts query.
func (s *shape) queriedMetricsExported(t *testing.T) {
	if r := call(t, "GET", s.REST()+"/api/v1/p/tokens"); r.status != 200 {
		t.Fatalf("GET tokens: %d", r.status)
	}
	if status, _ := postJSON(t, "http://"+s.Public("8081")+"/v1", rpc("eth_sendRawTransaction", "0x00"), nil); status != 200 {
		t.Fatalf("eth_sendRawTransaction: HTTP %d", status)
	}
	var admins []string
	for _, in := range s.All() {
		admins = append(admins, "http://"+in.Admin())
	}
	queriedMetricsExported(t, admins...)
}

// scrapeNames returns the sample names of a Prometheus text exposition.
func scrapeNames(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	names := map[string]bool{}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 64<<20))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}
