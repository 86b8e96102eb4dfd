package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"blockspace.exchange/topics"
)

// kcat runs kcat (librdkafka, a client nobody here wrote) with args and
// returns its output; it fails when kcat is missing, so the check never
// passes by being skipped.
func kcat(t *testing.T, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat is not installed (%v); run scripts/ensure-kcat.sh first", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v\nstderr: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// TestKcatReadsWhatTheStackWrote: kcat lists every topic of the running
// dev stack's embedded broker and reads, with a consumer group of its
// own, the market.open records the slot clock wrote and the market.status
// records the matcher wrote in its transactions, as the JSON envelopes
// docs/topics.md describes.
func TestKcatReadsWhatTheStackWrote(t *testing.T) {
	t.Parallel()
	s := startStack(t, worldTempDir(t))
	broker := s.Addresses().Kafka[0]
	metadata := kcat(t, "-b", broker, "-L")
	for _, tp := range topics.Catalog() {
		if !strings.Contains(metadata, `topic "`+tp.Name+`"`) {
			t.Errorf("kcat -L does not list %s:\n%s", tp.Name, metadata)
		}
	}
	attempt := 0
	seen := func(topic, typ string) bool {
		// A new group each time, so that it starts from the earliest offset.
		attempt++
		group := fmt.Sprintf("kcat-%s-%d", topic, attempt)
		out := kcat(t, "-b", broker, "-G", group, "-X", "auto.offset.reset=earliest", "-X", "isolation.level=read_committed",
			"-e", "-q", "-f", "%s\n", topic)
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var e struct {
				Type string          `json:"type"`
				ID   string          `json:"id"`
				Data json.RawMessage `json:"data"`
			}
			if json.Unmarshal([]byte(line), &e) == nil && e.Type == typ && e.ID != "" && len(e.Data) > 2 {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(90 * time.Second)
	for _, want := range []struct{ topic, typ string }{{topics.Orders, topics.TypeMarketOpen}, {topics.OrderEvents, topics.TypeMarketStatus}} {
		for !seen(want.topic, want.typ) {
			if time.Now().After(deadline) {
				t.Fatalf("kcat read no %s record on %s", want.typ, want.topic)
			}
			time.Sleep(time.Second)
		}
	}
}
