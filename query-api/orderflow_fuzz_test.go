package queryapi

import (
	"strings"
	"testing"
)

// FuzzHashParam: a hash in a tracking path or query is accepted only as
// 0x and 64 hex digits, and then in lower case.
func FuzzHashParam(f *testing.F) {
	f.Add("0x" + strings.Repeat("Ab", 32))
	f.Add("0x")
	f.Add(strings.Repeat("0", 66))
	f.Fuzz(func(t *testing.T, s string) {
		h, ok := hashParam(s)
		if !ok {
			return
		}
		if len(h) != 66 || !strings.HasPrefix(h, "0x") || h != strings.ToLower(h) {
			t.Fatalf("accepted %q as %q", s, h)
		}
	})
}
