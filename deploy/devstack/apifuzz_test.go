package devstack

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"blockspace.exchange/platform/api"
	"blockspace.exchange/platform/kafka/kafkatest"
)

// schemathesisVersion is the version scripts/ensure-schemathesis.sh pins.
const schemathesisVersion = "4.32.5"

// sessionOps are the operations that end or rotate the session the
// credentialed run uses; they run last, on their own.
var sessionOps = []string{"refreshLogin", "refreshLoginV1", "logout", "logoutV1"}

// TestAPIConformsToOpenAPI runs Schemathesis against the stack with the
// OpenAPI document as the oracle: every operation with generated valid and
// invalid input, a wallet's bearer token and refresh cookie from a real
// EIP-712 login, then the session operations, then the private operations
// again with no credential. Any check that fails fails the test, with the
// report. FUZZ_API_EXAMPLES (default 20) and FUZZ_API_SEED (default 1;
// "random" for a new one) set the depth and seed; make fuzz-api runs it
// longer.
func TestAPIConformsToOpenAPI(t *testing.T) {
	t.Parallel()
	st := schemathesis(t)
	examples, seed := fuzzSettings(t)
	s := startStackWith(t, worldTempDir(t), map[string]string{
		// A broker of its own: the fuzzer runs for minutes, while the
		// other tests take the shared one in turn.
		"KAFKA_BROKERS": strings.Join(kafkatest.StartBroker(t).Addrs(), ","),
		// The fuzzer logs in from one address far faster than any person;
		// TestLoginIsRateLimited covers the limits themselves.
		"AUTH_LOGIN_RATE_PER_IP": "1000000", "AUTH_LOGIN_BURST_PER_IP": "1000000",
		"AUTH_LOGIN_RATE_PER_ADDRESS": "1000000", "AUTH_LOGIN_BURST_PER_ADDRESS": "1000000",
	})
	base := s.Addresses().REST
	c := client{t: t, base: base}
	w := newWallet(t)
	sess, a := w.login(t, c)
	refresh := a.cookie("x_auth_refresh_token")
	if refresh == nil {
		t.Fatalf("login set no refresh cookie: %v", a.cookies)
	}
	// Funds in both accounts take transfers, withdrawals and buys past
	// their balance checks.
	tr := sessionTrader(t, c, w, sess)
	s.fund(tr, 1, "5", "2")
	credentials := []string{
		"--header", "Authorization: Bearer " + sess.AccessToken.Token,
		"--header", "Cookie: " + refresh.Name + "=" + refresh.Value,
	}
	// A session that died during the credentialed run would have left the
	// private operations answering only the documented 401.
	sessionLived := func() {
		if a := c.do("GET", "/api/v1/user/info", nil, bearer(sess.AccessToken.Token)); a.status != 200 {
			t.Errorf("GET /api/v1/user/info with the wallet's token: %d %s; the credentialed run needs the session live from start to end", a.status, a.raw)
		}
	}
	sessionLived()
	runs := []struct {
		name  string
		args  []string
		after func()
	}{
		{"credentialed", append(exclude(sessionOps), credentials...), sessionLived},
		{"session operations", append(include(sessionOps), credentials...), func() {}},
		{"no credential", include(privateOperations(t)), func() {}},
	}
	config := fuzzConfig(t, tr)
	for _, r := range runs {
		args := []string{"--config-file", config, "run", base + "/api/v1/openapi.yaml", "--url", base,
			"--max-examples", strconv.Itoa(examples), "--seed", seed,
			"--workers", "2", "--request-timeout", "10",
			"--generation-database", "none", "--no-color", "--output-truncate", "false",
			"--header", "User-Agent: " + testUA,
		}
		runSchemathesis(t, st, r.name, append(args, r.args...))
		r.after()
	}
}

// fuzzConfig writes testdata/schemathesis.toml with the wallet's accounts
// added: most of the time an account id is drawn from them, so that the
// operations on accounts and orders get past their 403 to the rules behind
// it. A single order or cancel names the preconf trading account.
func fuzzConfig(t *testing.T, tr *trader) string {
	t.Helper()
	base, err := os.ReadFile("testdata/schemathesis.toml")
	if err != nil {
		t.Fatal(err)
	}
	current, preconf := strconv.FormatInt(tr.current, 10), strconv.FormatInt(tr.preconf, 10)
	own := "\n[dictionaries.own-accounts]\nvalues = [" + current + ", " + preconf + "]\n" +
		"\n[dictionaries.preconf-account]\nvalues = [" + preconf + "]\n\n[parameters]\n"
	bind := func(param, dictionary string) {
		own += fmt.Sprintf("%q = { dictionary = %q, probability = 0.75 }\n", param, dictionary)
	}
	for _, p := range []string{"path.accountId", "query.fromAccountId", "query.toAccountId",
		"body.[*].accountId", "body.fromAccountId", "body.toAccountId"} {
		bind(p, "own-accounts")
	}
	bind("body.accountId", "preconf-account")
	path := filepath.Join(t.TempDir(), "schemathesis.toml")
	if err := os.WriteFile(path, append(base, own...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// schemathesis returns the st command of the pinned install, failing the
// test (never skipping it) when it is missing.
func schemathesis(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(root, ".cache", "schemathesis", schemathesisVersion, "venv", "bin", "st")
	if _, err := os.Stat(st); err != nil {
		t.Fatalf("schemathesis %s is not installed (%v); run scripts/ensure-schemathesis.sh (make test runs it)", schemathesisVersion, err)
	}
	return st
}

// fuzzSettings reads the examples per operation and the seed: a fixed
// seed by default, so that make test repeats the same requests.
func fuzzSettings(t *testing.T) (examples int, seed string) {
	t.Helper()
	examples, seed = 20, "1"
	if v := os.Getenv("FUZZ_API_EXAMPLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("FUZZ_API_EXAMPLES=%q: want a whole number of examples per operation, 1 or more", v)
		}
		examples = n
	}
	switch v := os.Getenv("FUZZ_API_SEED"); v {
	case "":
	case "random":
		seed = strconv.FormatUint(uint64(rand.Uint32()), 10)
	default:
		if _, err := strconv.ParseUint(v, 10, 32); err != nil {
			t.Fatalf("FUZZ_API_SEED=%q: want a whole number or random", v)
		}
		seed = v
	}
	return examples, seed
}

// runSchemathesis runs st with args and fails the test, with the report,
// when st exits non-zero: a failed check, or an error of the run itself.
func runSchemathesis(t *testing.T, st, name string, args []string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), st, args...)
	// Schemathesis and Hypothesis keep caches in the working directory; a
	// fresh one per run keeps them out of the repository, and a run from
	// replaying an earlier run's failures.
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	t.Logf("schemathesis, %s run:\n%s", name, out)
	if err != nil {
		t.Errorf("schemathesis, %s run, found the service and its document disagree (%v); its report is above", name, err)
	}
}

// privateOperations lists the operationIds the document marks with a
// security requirement.
func privateOperations(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string           `yaml:"operationId"`
			Security    []map[string]any `yaml:"security"`
		} `yaml:"paths"`
	}
	if err := yaml.Unmarshal(api.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ops := range doc.Paths {
		for _, op := range ops {
			if len(op.Security) > 0 {
				ids = append(ids, op.OperationID)
			}
		}
	}
	if len(ids) < 10 {
		t.Fatalf("only %d private operations in the document", len(ids))
	}
	sort.Strings(ids)
	return ids
}

// include and exclude select operations by operationId.
func include(ids []string) []string { return operationFlags("--include-operation-id", ids) }
func exclude(ids []string) []string { return operationFlags("--exclude-operation-id", ids) }

func operationFlags(flag string, ids []string) []string {
	var args []string
	for _, id := range ids {
		args = append(args, flag, id)
	}
	return args
}
