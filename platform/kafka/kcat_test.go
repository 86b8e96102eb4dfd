package kafka

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"blockspace.exchange/topics"
)

// kcatPath finds kcat or fails: the interoperability check must never pass
// by being skipped.
func kcatPath(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat is not installed (%v); run scripts/ensure-kcat.sh first", err)
	}
	return path
}

func runKcat(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kcatPath(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v\nstderr: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// TestKcatReadsTheBrokers checks that a librdkafka client sees the
// catalog's topics on kfake (the broker of make run) and on Apache Kafka,
// and reads an envelope as the same JSON the services wrote.
func TestKcatReadsTheBrokers(t *testing.T) {
	kcatPath(t)
	t.Run("kfake", func(t *testing.T) { kcatReads(t, startKfake(t)) })
	t.Run("apache", func(t *testing.T) { kcatReads(t, startApache(t)) })
}

func kcatReads(t *testing.T, b broker) {
	e, cl, _ := catalogOn(t, b)
	layout, err := topics.DefaultLayout(topics.Orders)
	if err != nil {
		t.Fatal(err)
	}
	env, err := topics.ClockTick{Slot: 11000000, Kind: topics.TickMarketOpen}.Envelope(time.UnixMilli(1738823252000))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewSlotRecord(topics.Orders, layout, 11000000, env)
	if err != nil {
		t.Fatal(err)
	}
	produced := produce(t, cl, r)[0]
	addr := e.Addrs()[0]

	metadata := runKcat(t, "-b", addr, "-L")
	for _, topic := range topics.Catalog() {
		if !strings.Contains(metadata, `topic "`+topic.Name+`"`) {
			t.Errorf("kcat -L does not list topic %s:\n%s", topic.Name, metadata)
		}
	}

	out := runKcat(t, "-b", addr, "-C", "-t", topics.Orders, "-e", "-o", "beginning",
		"-f", "%p|%k|%h|%s\n")
	line := strings.TrimSpace(out)
	want := "0|11000000|type=clock.tick,version=1|" + string(produced.Value)
	if line != want {
		t.Fatalf("kcat consumed\n %q\nwant\n %q", line, want)
	}
	back, err := topics.Decode([]byte(line[strings.LastIndex(line, "|")+1:]))
	if err != nil {
		t.Fatal(err)
	}
	if tick, err := topics.DecodeClockTick(back); err != nil || tick.Slot != 11000000 {
		t.Fatalf("kcat output decodes to %+v, %v", tick, err)
	}
}
