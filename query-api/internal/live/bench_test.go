package live

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/query-api/internal/markets"
	"blockspace.exchange/topics"
)

// BenchmarkFanout measures a fill's way from the producer to 1,000
// WebSockets subscribed to recentTrade on loopback: the fill record is
// produced to a real broker of its own, the market feed reads it, the model
// applies it, the server pushes it to every socket. The sockets live in a
// child process (as clients do), which notes the wall-clock time each
// message arrives. Each op is one fill; it ends when every socket has it.
//
// Reported: latency from just before the produce call to each socket's
// read (p50, p99, max, ms); the same for a plain Kafka consumer of the
// fills topic in the same run (the baseline: the part the log itself
// takes); messages delivered per second, and per CPU-second of the server
// process (server and feed; the broker's JVM and the clients are
// processes of their own).
//
//	go test -run '^$' -bench Fanout -benchtime 300x ./query-api/internal/live/
func BenchmarkFanout(b *testing.B) {
	const sockets = 1000
	br := startBroker(b)
	h := newHarness(b, Config{RequestRate: 1000, RequestBurst: 1000}, nil)
	br.openMarket(7, topics.WholeBlock)
	br.feed(h)
	poll.Until(b, "the market in the model", func() bool {
		var ok bool
		h.model.View(func(v markets.View) { _, ok = v.Ticker("ETH-WB-7") })
		return ok
	})

	var (
		mu        sync.Mutex
		sent      = map[int64]time.Time{}
		latencies []time.Duration
		kafkaLat  []time.Duration
		got       = map[int64]int{}
		done      = make(chan int64, 1)
	)
	base, err := kafka.NewClient(br.cfg, kgo.ConsumeTopics(topics.Fills), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	if err != nil {
		b.Fatal(err)
	}
	defer base.Close()
	go func() {
		for {
			fs := base.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			at := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				id := number(r.Value, `"tradeId":`)
				mu.Lock()
				kafkaLat = append(kafkaLat, at.Sub(sent[id]))
				mu.Unlock()
			})
		}
	}()

	child := exec.Command(os.Args[0], "-test.run=^TestFanoutClients$")
	child.Env = append(os.Environ(), "LIVE_BENCH_URL="+h.url, "LIVE_BENCH_SOCKETS="+strconv.Itoa(sockets))
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	lines := bufio.NewScanner(out)
	for lines.Scan() && lines.Text() != "ready" {
	}
	go func() {
		for lines.Scan() {
			f := bytes.Fields(lines.Bytes())
			if len(f) != 2 {
				continue
			}
			id, _ := strconv.ParseInt(string(f[0]), 10, 64)
			at, _ := strconv.ParseInt(string(f[1]), 10, 64)
			mu.Lock()
			latencies = append(latencies, time.Unix(0, at).Sub(sent[id]))
			got[id]++
			n := got[id]
			mu.Unlock()
			if n == sockets {
				done <- id
			}
		}
	}()

	cpu0 := cpuTime()
	start := time.Now()
	b.ResetTimer()
	for i := range b.N {
		id := int64(i + 1)
		mu.Lock()
		sent[id] = time.Now()
		mu.Unlock()
		br.slotRecord(topics.Fills, 7, topics.TypeTradeExecuted, topics.Fill{TradeID: id, InstrumentID: "ETH-WB-7", Slot: 7,
			MarketID: topics.MarketID(topics.WholeBlock, 7), Price: "1.5", Quantity: "1", Side: true, PreconfQuantity: "0"})
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			mu.Lock()
			b.Fatalf("fill %d reached %d of %d sockets", id, got[id], sockets)
		}
	}
	b.StopTimer()
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	mu.Lock()
	defer mu.Unlock()
	ms := func(ds []time.Duration, p float64) float64 {
		slices.Sort(ds)
		return float64(ds[int(p*float64(len(ds)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(ms(latencies, 0.5), "p50-ms")
	b.ReportMetric(ms(latencies, 0.99), "p99-ms")
	b.ReportMetric(ms(latencies, 1), "max-ms")
	if len(kafkaLat) > 0 {
		b.ReportMetric(ms(kafkaLat, 0.5), "kafka-only-p50-ms")
		b.ReportMetric(ms(kafkaLat, 0.99), "kafka-only-p99-ms")
	}
	msgs := float64(len(latencies))
	b.ReportMetric(msgs/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(msgs/cpu.Seconds(), "msgs/server-cpu-s")
	if st := h.srv.hub.Stats(); st.Dropped > 0 {
		b.Fatalf("%d sockets dropped", st.Dropped)
	}
}

// TestFanoutClients is BenchmarkFanout's child process: it opens the
// sockets, prints "ready", then one line "<trxId> <unix ns>" per message
// received. Outside the benchmark it does nothing.
func TestFanoutClients(t *testing.T) {
	url := os.Getenv("LIVE_BENCH_URL")
	if url == "" {
		t.Skip("run by BenchmarkFanout")
	}
	n, _ := strconv.Atoi(os.Getenv("LIVE_BENCH_SOCKETS"))
	lines := make(chan string, 65536)
	for range n {
		c, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"op":"subscribe","args":[{"channel":"recentTrade","marketType":"wholeBlock"}]}`)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.ReadMessage(); err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				_, m, err := c.ReadMessage()
				if err != nil {
					return
				}
				lines <- fmt.Sprintf("%d %d\n", number(m, `"trxId":`), time.Now().UnixNano())
			}
		}()
	}
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(w, "ready")
	_ = w.Flush()
	for l := range lines {
		w.WriteString(l)
		if len(lines) == 0 {
			_ = w.Flush()
		}
	}
}

// number reads the integer after field (`"name":`) in a JSON message.
func number(m []byte, field string) int64 {
	i := bytes.Index(m, []byte(field))
	if i < 0 {
		return 0
	}
	j := i + len(field)
	k := j
	for k < len(m) && m[k] >= '0' && m[k] <= '9' {
		k++
	}
	n, _ := strconv.ParseInt(string(m[j:k]), 10, 64)
	return n
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
