package matcher

import (
	"strings"
	"testing"

	"blockspace.exchange/platform/config"
)

// MATCHER_SNAPSHOT_EVERY is -1 (off) or a positive count; 0 would silently
// mean the default, so it is refused like any other value out of range.
func TestSnapshotEvery(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int
		bad   bool
	}{
		{"", 50_000, false},
		{"-1", -1, false},
		{"1", 1, false},
		{"200000", 200_000, false},
		{"0", 0, true},
		{"-2", 0, true},
		{"lots", 0, true},
	} {
		r := config.FromMap(map[string]string{"MATCHER_SNAPSHOT_EVERY": tc.value})
		got := ConfigFromEnv(r).SnapshotEvery
		err := r.Err()
		if tc.bad {
			if err == nil || !strings.Contains(err.Error(), "MATCHER_SNAPSHOT_EVERY") {
				t.Errorf("MATCHER_SNAPSHOT_EVERY=%q: error %v, want one naming the variable", tc.value, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("MATCHER_SNAPSHOT_EVERY=%q: %d, %v; want %d", tc.value, got, err, tc.want)
		}
	}
}

// With no variable set the matcher joins group "matcher" with batches of
// 10,000 records, as docs/deploy.md lists.
func TestConfigFromEnvDefaults(t *testing.T) {
	r := config.FromMap(map[string]string{"MATCHER_INSTANCE_ID": "matcher-0"})
	cfg := ConfigFromEnv(r)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if cfg.Group != "matcher" || cfg.InstanceID != "matcher-0" || cfg.StaticMember || cfg.MaxBatch != 10_000 {
		t.Errorf("defaults: %+v", cfg)
	}
}
