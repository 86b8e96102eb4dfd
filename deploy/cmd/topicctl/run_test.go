package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"blockspace.exchange/platform/kafka/kraft/krafttest"
	"blockspace.exchange/topics"
)

func TestMain(m *testing.M) {
	code := m.Run()
	krafttest.StopShared()
	os.Exit(code)
}

// startBroker returns the test binary's shared broker, emptied of every
// topic for the test: a fresh cluster, as far as topicctl can tell.
func startBroker(t *testing.T) string {
	t.Helper()
	return krafttest.Shared(t, nil)[0]
}

func runCommand(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := run(ctx, args, func(k string) string { return env[k] }, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestApplyListRaise walks the operator's path on a fresh cluster: apply the
// catalog (twice, as compose may), list it, raise the orders family and see
// the new layout and counts in list.
func TestApplyListRaise(t *testing.T) {
	addr := startBroker(t)
	for range 2 {
		if code, out, errOut := runCommand(t, nil, "-brokers", addr, "apply"); code != 0 || !strings.Contains(out, "applied 13 topics") {
			t.Fatalf("apply exited %d: %s %s", code, out, errOut)
		}
	}
	code, out, errOut := runCommand(t, map[string]string{"KAFKA_BROKERS": addr}, "list")
	if code != 0 {
		t.Fatalf("list exited %d: %s", code, errOut)
	}
	for _, topic := range topics.Catalog() {
		if !strings.Contains(out, topic.Name+" ") {
			t.Errorf("list does not show %s:\n%s", topic.Name, out)
		}
	}
	if !strings.Contains(out, "0:16") || strings.Contains(out, "missing") {
		t.Fatalf("list before raise:\n%s", out)
	}

	code, out, errOut = runCommand(t, nil, "-brokers", addr, "raise", "-topic", "orders", "-partitions", "24", "-current-slot", "11000000")
	if code != 0 || !strings.Contains(out, "orders: 24 partitions from slot 11000096") {
		t.Fatalf("raise exited %d: %s %s", code, out, errOut)
	}
	_, out, _ = runCommand(t, nil, "-brokers", addr, "list")
	if !strings.Contains(out, "0:16 11000096:24") {
		t.Fatalf("list after raise does not show the new epoch:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if fields := strings.Fields(line); len(fields) > 1 && fields[0] == topics.Fills && fields[1] != "24" {
			t.Fatalf("fills was not raised with its family: %q", line)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no command", []string{"-brokers", "127.0.0.1:1"}, "missing command"},
		{"unknown command", []string{"-brokers", "127.0.0.1:1", "drop"}, `unknown command "drop"`},
		{"apply with arguments", []string{"-brokers", "127.0.0.1:1", "apply", "x"}, "takes no arguments"},
		{"raise without topic", []string{"-brokers", "127.0.0.1:1", "raise", "-partitions", "3", "-current-slot", "1"}, "-topic is required"},
		{"raise without slot", []string{"-brokers", "127.0.0.1:1", "raise", "-topic", "orders", "-partitions", "3"}, "-current-slot is required"},
		{"raise with zero partitions", []string{"-brokers", "127.0.0.1:1", "raise", "-topic", "orders", "-partitions", "0", "-current-slot", "1"}, "-partitions must be"},
		{"bad broker", []string{"-brokers", "kafka", "list"}, "not host:port"},
		{"bad timeout", []string{"-timeout", "0s", "list"}, "-timeout must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runCommand(t, nil, tt.args...)
			if code != 2 || !strings.Contains(errOut, tt.want) || !strings.Contains(errOut, "usage: topicctl") {
				t.Fatalf("exit %d, stderr %q; want 2 and %q with the usage", code, errOut, tt.want)
			}
		})
	}
}

func TestRaiseFailureExitsOne(t *testing.T) {
	addr := startBroker(t)
	if code, _, errOut := runCommand(t, nil, "-brokers", addr, "apply"); code != 0 {
		t.Fatal(errOut)
	}
	code, _, errOut := runCommand(t, nil, "-brokers", addr, "raise", "-topic", "orders", "-partitions", "8", "-current-slot", "5")
	if code != 1 || !strings.Contains(errOut, "would lower") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
