package ingress_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"blockspace.exchange/ingress"
	"blockspace.exchange/topics"
)

// BenchmarkPlaceOrders measures order entry through the whole ingress:
// HTTP over loopback into gin, the bearer check, the static checks, the
// reservation, order and outbox rows in Postgres, the commands to the
// embedded Kafka broker, the answer. Concurrent clients each place limit
// buys for their own account. It reports orders accepted per second;
// `group=off` writes one transaction per request (the baseline),
// `group=on` shares transactions between concurrent requests. It also
// reports the CPU time of this process per order (the service and the
// benchmark's HTTP clients; Postgres and the broker's disk writes not
// included), which depends less on what else the machine runs.
//
//	go test -run '^$' -bench PlaceOrders -benchtime 20000x ./ingress/
func BenchmarkPlaceOrders(b *testing.B) {
	for _, bc := range []struct {
		name       string
		perRequest int
		orders     ingress.OrderEntryConfig
	}{
		{"group=off/orders-per-request=1", 1, ingress.OrderEntryConfig{BatchMax: 1, BatchWait: time.Microsecond}},
		{"group=on/orders-per-request=1", 1, ingress.OrderEntryConfig{}},
		{"group=on/orders-per-request=10", 10, ingress.OrderEntryConfig{}},
	} {
		b.Run(bc.name, func(b *testing.B) { benchPlace(b, bc.perRequest, bc.orders) })
	}
}

// processCPU is the user and system CPU time this process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchClients is how many requests are in flight at once.
const benchClients = 128

func benchPlace(b *testing.B, perRequest int, cfg ingress.OrderEntryConfig) {
	h := newMarketsHarness(b, harnessOptions{orders: cfg})
	srv := httptest.NewServer(h.handler)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchClients, DisableCompression: true}}
	type clientState struct {
		token string
		body  []byte
	}
	clients := make([]clientState, benchClients)
	for i := range clients {
		u := h.newUser(fmt.Sprintf("0x%040x", 0xbe000+i), "0")
		h.fund(u.preconf, "1000000000")
		var body bytes.Buffer
		body.WriteByte('[')
		for j := range perRequest {
			if j > 0 {
				body.WriteByte(',')
			}
			body.WriteString(order(u.preconf, wbOpen, true, 2, "1", fmt.Sprintf("0.%04d", 1+(i*perRequest+j)%9999), ""))
		}
		body.WriteByte(']')
		clients[i] = clientState{token: "Bearer " + u.token, body: body.Bytes()}
		// One sell first, so that the service knows the account, as it
		// does a client's that trades.
		if os := orders(b, h.place(u, topics.WholeBlock, order(u.preconf, wbOpen, false, 2, "1", "1", ""))); errorCode(os[0]) != 0 {
			b.Fatalf("warm-up order refused: %v", os[0])
		}
	}
	requests := max(b.N/perRequest, 1)
	var next, failed atomic.Int64
	var firstErr sync.Once
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu0 := processCPU(b)
	start := time.Now()
	for i := range benchClients {
		wg.Go(func() {
			c := clients[i]
			for next.Add(1) <= int64(requests) {
				req, _ := http.NewRequest("POST", srv.URL+"/api/v1/wholeblock/order", bytes.NewReader(c.body))
				req.Header.Set("Authorization", c.token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err == nil {
					var body []byte
					body, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					if err == nil && (resp.StatusCode != 200 || bytes.Contains(body, []byte(`"errorCode":1`))) {
						err = fmt.Errorf("answer %d %s", resp.StatusCode, body)
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.Do(func() { b.Error(err) })
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := processCPU(b) - cpu0
	b.StopTimer()
	placed := requests * perRequest
	b.ReportMetric(float64(placed)/elapsed.Seconds(), "orders/s")
	// CPU time of this process (the service and its HTTP clients) per
	// order: on a shared machine a steadier figure than orders/s.
	b.ReportMetric(float64(cpu.Microseconds())/float64(placed), "cpu-µs/order")
	if n := h.count(`SELECT count(*) FROM orders`) - benchClients; n != placed || failed.Load() > 0 {
		b.Fatalf("%d orders stored of %d placed, %d requests failed", n, placed, failed.Load())
	}
	if n := len(h.commandsOf(topics.TypeOrderPlace)) - benchClients; n != placed {
		b.Fatalf("%d commands published of %d placed", n, placed)
	}
}
