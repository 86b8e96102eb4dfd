package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestRegisterReusesTheRegisteredCollector: a second instance registering
// the same metric counts into the first one's series; a metric of the
// same name with other labels is refused; label values given up front
// exist at 0; a nil registry registers nothing.
func TestRegisterReusesTheRegisteredCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "things_total", Help: "Things."}
	first, err := CounterVec(reg, opts, []string{"kind"}, Values("a", "b")...)
	if err != nil {
		t.Fatal(err)
	}
	second, err := CounterVec(reg, opts, []string{"kind"})
	if err != nil {
		t.Fatal(err)
	}
	second.WithLabelValues("a").Add(2)
	if n := testutil.ToFloat64(first.WithLabelValues("a")); n != 2 {
		t.Fatalf("first instance reads %v after the second counted 2", n)
	}
	if n := testutil.CollectAndCount(first); n != 2 {
		t.Fatalf("%d series, want the 2 values given up front", n)
	}
	if _, err := CounterVec(reg, opts, []string{"other"}); err == nil {
		t.Fatal("a metric of the same name with other labels was registered")
	}
	g, err := Gauge(nil, prometheus.GaugeOpts{Name: "level", Help: "Level."})
	if err != nil {
		t.Fatal(err)
	}
	g.Set(3)
	if n := testutil.ToFloat64(g); n != 3 {
		t.Fatalf("unregistered gauge reads %v", n)
	}
}
