package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/internal/audit"
	"blockspace.exchange/settler/schema"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func audited(t *testing.T, url string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, url, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestExitStatus(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	url := pool.Config().ConnString()

	for _, tc := range []struct {
		args   []string
		checks int
	}{{nil, len(audit.Selected())}, {[]string{"-quiescent"}, len(audit.Selected(audit.Quiescent))}} {
		code, out, errOut := audited(t, url, tc.args...)
		if want := fmt.Sprintf("ledger-audit: %d checks passed\n", tc.checks); code != 0 || out != want || errOut != "" {
			t.Fatalf("%q on a clean ledger: exit %d, stdout %q, stderr %q; want 0 and %q", tc.args, code, out, errOut, want)
		}
	}
	if len(audit.Selected(audit.Quiescent)) <= len(audit.Selected()) {
		t.Fatal("-quiescent adds no check")
	}

	// Custody holds 1 ETH that no entry put there.
	if _, err := pool.Exec(t.Context(), `UPDATE account_balances SET quantity = 1 WHERE token_id = 1 AND account_id =
		(SELECT account_id FROM accounts WHERE user_id IS NULL AND type = 101)`); err != nil {
		t.Fatal(err)
	}
	code, out, _ := audited(t, url)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 1 || len(lines) != 3 ||
		lines[0] != "VIOLATION token sums are zero: token 1 sums to 1" ||
		!strings.HasPrefix(lines[1], "VIOLATION balances match the journal: account ") ||
		lines[2] != "ledger-audit: 2 violations" {
		t.Fatalf("a broken ledger: exit %d, stdout:\n%s", code, out)
	}
}

func TestCannotRun(t *testing.T) {
	url := pgtest.New(t, nil).Config().ConnString()
	for _, tc := range []struct {
		name, url string
		args      []string
		stderr    string
	}{
		{"no DATABASE_URL", "", nil, "DATABASE_URL is required"},
		{"limit 0 would hide every violation", url, []string{"-limit", "0"}, "-limit must be at least 1"},
		{"stray argument", url, []string{"quiescent"}, "unexpected arguments"},
		{"unknown flag", url, []string{"-fix"}, "flag provided but not defined"},
		{"schema missing", url, nil, "account_balances"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := audited(t, tc.url, tc.args...)
			if code != 2 || out != "" || !strings.Contains(errOut, tc.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errOut, tc.stderr)
			}
		})
	}
}
