// Package monitoring holds what an operator's Prometheus and Grafana load:
// the dashboard (dashboard.json, a row per stage) and the alert rules
// (alerts.yml, with their unit tests in alerts_test.yml). It reads the
// PromQL of both so that tests can hold them to the metrics the services
// export (docs/operations.md, "Metrics" and "Alerts").
package monitoring

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Dashboard is the Grafana dashboard, JSON for Grafana's import.
//
//go:embed dashboard.json
var Dashboard []byte

// Alerts is the Prometheus rule file of the alerts.
//
//go:embed alerts.yml
var Alerts []byte

// Query is one PromQL expression and where it is written.
type Query struct {
	Where string // "panel 12 (Lag by group) A" or "alert SettlerStalled"
	Expr  string
}

// Panel is the part of a Grafana panel the tests read.
type Panel struct {
	ID         int `json:"id"`
	Type       string
	Title      string
	Datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	}
	Panels  []Panel
	Targets []Target
	GridPos struct{ X, Y, W, H int } `json:"gridPos"`
}

// Target is one query of a panel.
type Target struct {
	RefID      string `json:"refId"`
	Expr       string `json:"expr"`
	Datasource struct {
		UID string `json:"uid"`
	}
}

// Panels returns the dashboard's panels, rows and the panels inside
// collapsed rows alike, in order.
func Panels() ([]Panel, error) {
	var d struct {
		Panels []Panel `json:"panels"`
	}
	if err := json.Unmarshal(Dashboard, &d); err != nil {
		return nil, fmt.Errorf("dashboard.json: %w", err)
	}
	var all []Panel
	for _, p := range d.Panels {
		all = append(all, p)
		all = append(all, p.Panels...)
	}
	return all, nil
}

// DashboardQueries returns every query of the dashboard.
func DashboardQueries() ([]Query, error) {
	panels, err := Panels()
	if err != nil {
		return nil, err
	}
	var qs []Query
	for _, p := range panels {
		for _, t := range p.Targets {
			qs = append(qs, Query{Where: fmt.Sprintf("panel %d (%s) %s", p.ID, p.Title, t.RefID), Expr: t.Expr})
		}
	}
	return qs, nil
}

// Rule is one alerting rule of alerts.yml.
type Rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// Rules returns the alerting rules of alerts.yml.
func Rules() ([]Rule, error) {
	var f struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []Rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(Alerts, &f); err != nil {
		return nil, fmt.Errorf("alerts.yml: %w", err)
	}
	var rules []Rule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules, nil
}

// AlertQueries returns the expression of every alert.
func AlertQueries() ([]Query, error) {
	rules, err := Rules()
	if err != nil {
		return nil, err
	}
	qs := make([]Query, len(rules))
	for i, r := range rules {
		qs[i] = Query{Where: "alert " + r.Alert, Expr: r.Expr}
	}
	return qs, nil
}

// Queried returns the metric names the queries select, each with the
// places that use it: the names as they appear in the exposition format
// (a histogram's foo_bucket, foo_count, foo_sum).
func Queried(qs []Query) map[string][]string {
	names := map[string][]string{}
	for _, q := range qs {
		for _, n := range MetricNames(q.Expr) {
			names[n] = append(names[n], q.Where)
		}
	}
	return names
}

// keywords are PromQL words that are not metric names: operators and
// aggregations (which may be followed by by/without before their
// parenthesis). Those in labelLists are followed by a parenthesised list
// of label names.
var (
	keywords = map[string]bool{
		"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true,
		"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
		"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	}
	labelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
)

// MetricNames returns the metric names an expression selects, sorted and
// once each. It knows as much PromQL as the dashboard and the rules use:
// selectors with label matchers and ranges, function calls, aggregations
// with by/without, vector matching, numbers, durations and strings, and
// Grafana's $variables inside ranges.
func MetricNames(expr string) []string {
	seen := map[string]bool{}
	s := expr
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(s, i)
		case c == '{':
			i = skipTo(s, i, '}')
		case c == '[':
			i = skipTo(s, i, ']')
		case isDigit(c) || (c == '.' && i+1 < len(s) && isDigit(s[i+1])):
			for i < len(s) && (isDigit(s[i]) || s[i] == '.' || isLetter(s[i])) {
				i++
			}
		case isLetter(c) || c == '_' || c == ':':
			j := i
			for j < len(s) && (isLetter(s[j]) || isDigit(s[j]) || s[j] == '_' || s[j] == ':') {
				j++
			}
			word := s[i:j]
			next := skipSpace(s, j)
			switch {
			case labelLists[strings.ToLower(word)]:
				if next < len(s) && s[next] == '(' {
					j = skipTo(s, next, ')')
				}
			case keywords[strings.ToLower(word)]:
			case next < len(s) && s[next] == '(':
				// A function or an aggregation.
			default:
				seen[word] = true
			}
			i = j
		default:
			i++
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipTo returns the index after the first end at or after i, outside
// strings; the end of s when there is none.
func skipTo(s string, i int, end byte) int {
	for i++; i < len(s); i++ {
		switch s[i] {
		case end:
			return i + 1
		case '"', '\'', '`':
			i = skipString(s, i) - 1
		}
	}
	return len(s)
}

// skipString returns the index after the string literal that opens at i.
func skipString(s string, i int) int {
	quote := s[i]
	for i++; i < len(s); i++ {
		if s[i] == '\\' && quote != '`' {
			i++
			continue
		}
		if s[i] == quote {
			return i + 1
		}
	}
	return len(s)
}

// Family returns the metric family of an exposed name: a histogram's
// foo_bucket, foo_count and foo_sum belong to foo.
func Family(name string) string {
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			return base
		}
	}
	return name
}
