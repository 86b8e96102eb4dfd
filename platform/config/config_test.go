package config

import (
	"strings"
	"testing"
	"time"
)

func TestReaderParsesAndNamesBadValues(t *testing.T) {
	r := FromMap(map[string]string{"B1": "yes", "B0": " off ", "BX": "maybe", "I": "7", "IX": "70", "D": "250ms", "DX": "soon", "E": "  "})
	if r.StringOrEmpty("E", "x") != "" || r.StringOrEmpty("UNSET", "x") != "x" || r.String("E", "x") != "x" {
		t.Error("an empty variable is empty for StringOrEmpty and unset for String")
	}
	if !r.Bool("B1", false) || r.Bool("B0", true) || !r.Bool("UNSET", true) || r.Bool("E", false) {
		t.Error("bools")
	}
	if r.Bool("BX", true) != true {
		t.Error("a bad bool gives the default")
	}
	if r.Int("I", 1, 0, 10) != 7 || r.Int("IX", 1, 0, 10) != 1 {
		t.Error("ints")
	}
	if r.Duration("D", time.Second, time.Millisecond, time.Minute) != 250*time.Millisecond || r.Duration("DX", time.Second, 0, time.Minute) != time.Second {
		t.Error("durations")
	}
	err := r.Err()
	for _, name := range []string{`BX="maybe"`, `IX="70"`, `DX="soon"`} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("error %v does not name %s", err, name)
		}
	}
}
