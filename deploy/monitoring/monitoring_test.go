package monitoring

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		name, expr string
		want       []string
	}{
		{"a bare selector", "up", []string{"up"}},
		{"matchers and a range", `rate(http_refusals_total{reason="rate_limit",status=~"4.."}[5m])`, []string{"http_refusals_total"}},
		{"aggregation with by before and after", `sum by (group) (kafka_consumer_lag_records) + sum(matcher_books) by (instance)`, []string{"kafka_consumer_lag_records", "matcher_books"}},
		{"histogram quantile", `histogram_quantile(0.99, sum by (le) (rate(settler_apply_latency_seconds_bucket[$__rate_interval])))`, []string{"settler_apply_latency_seconds_bucket"}},
		{"binary operators, numbers and offset", "a_total - a_total offset 10m > 14.4 * 0.01 and on (instance) b unless ignoring (x) group_left (y) c", []string{"a_total", "b", "c"}},
		{"a string holding a name-like word", `count(chain_head_block{watcher="deposits and more"})`, []string{"chain_head_block"}},
		{"a name selected twice", "x / x", []string{"x"}},
		{"a colon in a recorded name", "job:requests:rate5m", []string{"job:requests:rate5m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MetricNames(tc.expr); !slices.Equal(got, tc.want) {
				t.Errorf("MetricNames(%q) = %v, want %v", tc.expr, got, tc.want)
			}
		})
	}
}

// promtool runs Prometheus's promtool in this package's directory and
// fails the test with its output when it fails.
func promtool(t *testing.T, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is not installed: run scripts/ensure-promtool.sh (make test does)")
	}
	out, err := exec.Command(path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestAlertRulesCheckAndPassTheirUnitTests(t *testing.T) {
	rules, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	out := promtool(t, "check", "rules", "alerts.yml")
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(rules)); !strings.Contains(out, want) {
		t.Errorf("promtool check rules: want %q in\n%s", want, out)
	}
	promtool(t, "test", "rules", "alerts_test.yml")
}

// Every alert has a unit test that expects it to fire: an alert whose
// expression can never be true would pass the rule check and every test
// that only expects silence.
func TestEveryAlertIsTestedFiring(t *testing.T) {
	raw, err := os.ReadFile("alerts_test.yml")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	firing := regexp.MustCompile(`alertname: (\w+)\n\s+exp_alerts:`).FindAllStringSubmatch(string(raw), -1)
	tested := map[string]bool{}
	for _, m := range firing {
		tested[m[1]] = true
	}
	for _, r := range rules {
		if !tested[r.Alert] {
			t.Errorf("alert %s has no test case in alerts_test.yml where it fires", r.Alert)
		}
	}
}

func TestAlertsCarrySeverityAndARunbookSection(t *testing.T) {
	rules, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	anchors := docAnchors(t)
	for _, r := range rules {
		if s := r.Labels["severity"]; s != "page" && s != "ticket" {
			t.Errorf("alert %s: severity %q, want page or ticket", r.Alert, s)
		}
		if r.Annotations["summary"] == "" {
			t.Errorf("alert %s has no summary", r.Alert)
		}
		anchor, ok := strings.CutPrefix(r.Annotations["runbook"], "docs/operations.md#")
		if !ok || !anchors[anchor] {
			t.Errorf("alert %s: runbook %q is not a section of docs/operations.md", r.Alert, r.Annotations["runbook"])
		}
	}
}

// docAnchors returns the anchors of docs/operations.md's headings, as
// GitHub renders them.
func docAnchors(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, line := range strings.Split(string(raw), "\n") {
		if title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") {
			anchors[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(title), ""), " ", "-")] = true
		}
	}
	return anchors
}

func TestDashboardQueriesParse(t *testing.T) {
	qs, err := DashboardQueries()
	if err != nil {
		t.Fatal(err)
	}
	// promtool checks PromQL in rule files: each query becomes a
	// recording rule, with Grafana's interval variable made a duration.
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, q := range qs {
		expr := strings.ReplaceAll(q.Expr, "$__rate_interval", "5m")
		fmt.Fprintf(&b, "      - record: dashboard:query_%d\n        expr: %q\n", i, expr)
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := promtool(t, "check", "rules", file)
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(qs)); !strings.Contains(out, want) {
		t.Errorf("want %q in\n%s", want, out)
	}
}

func TestDashboardLayout(t *testing.T) {
	panels, err := Panels()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[int]bool{}
	rows, inRow := 0, 0
	for i, p := range panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %d (%s): gridPos %+v is outside the 24 columns", p.ID, p.Title, p.GridPos)
		}
		if p.Type == "row" {
			if i > 0 && inRow == 0 {
				t.Errorf("the row before %q has no panels", p.Title)
			}
			rows, inRow = rows+1, 0
			continue
		}
		inRow++
		if p.Title == "" || len(p.Targets) == 0 {
			t.Errorf("panel %d has no title or no query", p.ID)
		}
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %d (%s): datasource %q, want the dashboard's ${datasource} variable", p.ID, p.Title, p.Datasource.UID)
		}
		for _, q := range p.Targets {
			if q.Datasource.UID != "${datasource}" || strings.TrimSpace(q.Expr) == "" {
				t.Errorf("panel %d (%s) query %s: datasource %q, expr %q", p.ID, p.Title, q.RefID, q.Datasource.UID, q.Expr)
			}
		}
	}
	if rows < 10 || inRow == 0 {
		t.Errorf("%d rows, the last with %d panels: want a row per stage, each with panels", rows, inRow)
	}
}

// The metrics catalogue of docs/operations.md describes every metric the
// dashboard and the alerts query, and the dashboard draws every metric of
// the catalogue.
func TestCatalogueDashboardAndAlertsAgree(t *testing.T) {
	catalogue := catalogueNames(t)
	dash, err := DashboardQueries()
	if err != nil {
		t.Fatal(err)
	}
	alerts, err := AlertQueries()
	if err != nil {
		t.Fatal(err)
	}
	drawn := map[string]bool{}
	for name, where := range Queried(append(dash, alerts...)) {
		family := Family(name)
		if strings.HasPrefix(family, "go_") || strings.HasPrefix(family, "process_") {
			continue // the client library's runtime metrics
		}
		if !catalogue[family] {
			t.Errorf("%s (%s) is not in the metrics catalogue of docs/operations.md", name, strings.Join(where, "; "))
		}
	}
	for name := range Queried(dash) {
		drawn[Family(name)] = true
	}
	for name := range catalogue {
		if !drawn[name] {
			t.Errorf("catalogue metric %s is on no panel of the dashboard", name)
		}
	}
}

// catalogueNames returns the metric names of the catalogue table in
// docs/operations.md, section "Metrics".
func catalogueNames(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n### Metrics\n")
	if !ok {
		t.Fatal("docs/operations.md has no section ### Metrics")
	}
	section, _, _ = strings.Cut(section, "\n#")
	names := map[string]bool{}
	metricCell := regexp.MustCompile("`([a-z_]+)`")
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.Contains(cells[2], "`") {
			continue
		}
		for _, m := range metricCell.FindAllStringSubmatch(cells[2], -1) {
			names[m[1]] = true
		}
	}
	if len(names) < 30 {
		t.Fatalf("found %d metrics in the catalogue of docs/operations.md; is the table's second column still the metric?", len(names))
	}
	return names
}
