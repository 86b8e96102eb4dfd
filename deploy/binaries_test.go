package deploy

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// serviceBinaries are the binaries that run in production: every cmd/* of
// a service module, found on disk so that a new one is checked too, and
// the operators' topicctl. The deploy module's other commands are dev and
// benchmark tools.
func serviceBinaries(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob("../*/cmd/*")
	if err != nil {
		t.Fatal(err)
	}
	binaries := []string{"blockspace.exchange/deploy/cmd/topicctl"}
	for _, dir := range dirs {
		module := filepath.Base(filepath.Dir(filepath.Dir(dir)))
		if module != "deploy" {
			binaries = append(binaries, "blockspace.exchange/"+module+"/cmd/"+filepath.Base(dir))
		}
	}
	for _, want := range []string{"ingress/cmd/ingress", "matcher/cmd/matcher", "settler/cmd/settler",
		"settler/cmd/ledger-audit", "orderflow-relay/cmd/orderflow-relay", "query-api/cmd/query-api"} {
		if !slices.Contains(binaries, "blockspace.exchange/"+want) {
			t.Fatalf("service binary %s not found among %v", want, binaries)
		}
	}
	return binaries
}

// devOnly are packages that must stay out of the service binaries, with
// why: they start servers, fake brokers or chains, or exist for tests.
var devOnly = map[string]string{
	"github.com/twmb/franz-go/pkg/kfake":                  "in-process fake Kafka broker",
	"blockspace.exchange/platform/kafka/kfakebroker":      "the dev stack's kfake broker",
	"blockspace.exchange/platform/kafka/kraft":            "Apache Kafka launcher for tests and make run-kafka",
	"blockspace.exchange/platform/devpostgres":            "private PostgreSQL cluster launcher",
	"blockspace.exchange/platform/childproc":              "child process supervision of the launchers",
	"blockspace.exchange/platform/poll":                   "test wait helper",
	"blockspace.exchange/platform/eip712":                 "EIP-712 signer of dev tools and tests",
	"blockspace.exchange/ingress/devkit":                  "the dev beacon, demo validator and generated signing key of the dev stack",
	"github.com/ethereum/go-ethereum/ethclient/simulated": "go-ethereum's simulated backend",
	"testing": "the standard test package: only tests and test kits import it",
}

// devOnlyReason says why pkg must not be linked into a service binary, or
// "" when it may be.
func devOnlyReason(pkg, binary string) string {
	if reason, ok := devOnly[pkg]; ok {
		return reason
	}
	if strings.HasPrefix(pkg, "blockspace.exchange/") && strings.HasSuffix(pkg, "test") {
		return "test kit"
	}
	if strings.HasPrefix(pkg, "blockspace.exchange/deploy/") && pkg != binary {
		return "dev stack, dev chain or dev tool (deploy module)"
	}
	return ""
}

func TestDevOnlyReasonNamesEachKind(t *testing.T) {
	const binary = "blockspace.exchange/deploy/cmd/topicctl"
	for _, pkg := range []string{"github.com/twmb/franz-go/pkg/kfake", "blockspace.exchange/platform/postgres/pgtest",
		"blockspace.exchange/platform/kafka/kafkatest", "blockspace.exchange/platform/proctest",
		"blockspace.exchange/platform/metricstest", "blockspace.exchange/deploy/devchain", "blockspace.exchange/ingress/devkit", "testing"} {
		if devOnlyReason(pkg, binary) == "" {
			t.Errorf("%s is not reported as dev-only", pkg)
		}
	}
	for _, pkg := range []string{binary, "blockspace.exchange/platform/postgres", "blockspace.exchange/platform/kafka",
		"blockspace.exchange/platform/process", "github.com/twmb/franz-go/pkg/kgo", "internal/poll"} {
		if reason := devOnlyReason(pkg, binary); reason != "" {
			t.Errorf("%s is reported as dev-only (%s)", pkg, reason)
		}
	}
}

// TestBinariesLinkNoDevOnlyPackage lists what each service binary links
// and fails naming every dev-only or test package among it.
func TestBinariesLinkNoDevOnlyPackage(t *testing.T) {
	binaries := serviceBinaries(t)
	deps := make([][]string, len(binaries))
	errs := make([]error, len(binaries))
	var wg sync.WaitGroup
	for i, binary := range binaries {
		wg.Go(func() { deps[i], errs[i] = listDeps(binary) })
	}
	wg.Wait()
	for i, binary := range binaries {
		if errs[i] != nil {
			t.Errorf("go list -deps %s: %v", binary, errs[i])
			continue
		}
		if !slices.Contains(deps[i], binary) || !slices.Contains(deps[i], "blockspace.exchange/topics") {
			t.Errorf("%s: go list -deps lists %d packages, without the binary or the topics contract", binary, len(deps[i]))
		}
		for _, pkg := range deps[i] {
			if reason := devOnlyReason(pkg, binary); reason != "" {
				t.Errorf("%s links %s (%s)", binary, pkg, reason)
			}
		}
	}
}

func listDeps(pkg string) ([]string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-deps", pkg)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.Fields(string(out)), nil
}
