package main

import (
	"strings"
	"testing"

	"blockspace.exchange/platform/config"
)

// SLOT_CLOCK is a boolean like every other switch, and a word that is not
// one stops the start instead of leaving the clock running.
func TestSlotClock(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  bool
		bad   bool
	}{
		{"", true, false},
		{"true", true, false},
		{"false", false, false},
		{"0", false, false},
		{"off", false, false},
		{"FALSE", false, false},
		{"flase", true, true},
	} {
		r := config.FromMap(map[string]string{"SLOT_CLOCK": tc.value})
		got := slotClock(r)
		err := r.Err()
		if tc.bad {
			if err == nil || !strings.Contains(err.Error(), "SLOT_CLOCK") {
				t.Errorf("SLOT_CLOCK=%q: error %v, want one naming SLOT_CLOCK", tc.value, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("SLOT_CLOCK=%q: %v, %v; want %v", tc.value, got, err, tc.want)
		}
	}
}
