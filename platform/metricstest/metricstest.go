// Package metricstest reads what a Prometheus registry would serve, for
// tests that assert on a service's metrics.
package metricstest

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Gather returns every sample of reg keyed as the text format writes it,
// name{label="value",...} with the labels in name order (a metric without
// labels is its bare name); a histogram gives its name_sum{...} and
// name_count{...}.
func Gather(t testing.TB, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			suffix := ""
			if len(labels) > 0 {
				suffix = "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.GetCounter() != nil:
				out[mf.GetName()+suffix] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[mf.GetName()+suffix] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				out[mf.GetName()+"_sum"+suffix] = m.GetHistogram().GetSampleSum()
				out[mf.GetName()+"_count"+suffix] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// Prefixed returns the samples of got whose key starts with prefix.
func Prefixed(got map[string]float64, prefix string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range got {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

// NonZero returns the samples of got that are not 0: what happened,
// without the series a metric creates at 0 from the start.
func NonZero(got map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range got {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// Dump lists samples one a line, sorted, for failure messages.
func Dump(got map[string]float64) string {
	lines := make([]string, 0, len(got))
	for k, v := range got {
		lines = append(lines, fmt.Sprintf("%s %v", k, v))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
