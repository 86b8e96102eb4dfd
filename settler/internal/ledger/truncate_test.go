package ledger

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncateKeepsValidText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"short", "no such account", 500, "no such account"},
		{"cut at a byte limit", "abcdef", 3, "abc"},
		{"never splits a character", "ab€", 4, "ab"},
		{"invalid bytes replaced", "bad \xff value", 500, "bad \uFFFD value"},
		{"invalid bytes then cut", strings.Repeat("\xff", 4), 5, "\uFFFD"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := truncate(tc.in, tc.n)
			if got != tc.want || !utf8.ValidString(got) || len(got) > tc.n {
				t.Errorf("truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		})
	}
}
