package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"blockspace.exchange/deploy/devstack"
	"blockspace.exchange/deploy/loadtest"
	"blockspace.exchange/platform/postgres"
	"blockspace.exchange/topics"
)

// stackEnv is the dev stack's configuration for the benchmark: one-minute
// slots, so that the markets the pairs trade in stay open for the whole
// run; dev chain blocks only when the command mines them (while it funds
// the traders), so that the chain costs little during the runs (its
// watchers still look at it every CHAIN_POLL, the dev stack's 250 ms: at
// 50 ms they took about 4% of a core with nothing to do); no login limits
// for the many wallets of one address.
var stackEnv = map[string]string{
	"SLOT_LENGTH": "1m", "DEV_BLOCK_INTERVAL": "0",
	"AUTH_LOGIN_RATE_PER_IP": "1000000000", "AUTH_LOGIN_BURST_PER_IP": "1000000000",
	"AUTH_LOGIN_RATE_PER_ADDRESS": "1000000000", "AUTH_LOGIN_BURST_PER_ADDRESS": "1000000000",
}

// drainWait is how long trades of the run may take to become visible
// after its last order.
const drainWait = 15 * time.Second

// summary is what the sweep's table shows of one measurement.
type summary struct {
	kafka      string // the broker: embedded or real
	wait       string // ORDER_ANSWER_WAIT
	answer     loadtest.Dist
	pairs      int
	ordersPerS float64
	toLedger   loadtest.Dist // HTTP answer -> trade in the ledger
	toSocket   loadtest.Dist // HTTP answer -> the buy's filled update on its WebSocket
	cpu        time.Duration // an order: this process, Postgres and a real broker
	// rate is the paced run's target in orders/s; 0 for the closed loop.
	rate float64
	// bareOrdersPerS and bareCPU are the bare gin handler's baseline:
	// orders/s and this process's CPU an order; 0 when not measured.
	bareOrdersPerS float64
	bareCPU        time.Duration
}

func run(ctx context.Context, o options) (summary, error) {
	fmt.Printf("machine: %d CPUs, load average %s\n", runtime.NumCPU(), loadAverage())
	t0 := time.Now()
	fmt.Printf("kafka: %s\n", kafkaName(o.kafka))
	fmt.Printf("ORDER_ANSWER_WAIT: %s\n", o.wait)
	tg, err := startTarget(ctx, o)
	if err != nil {
		return summary{}, err
	}
	defer tg.stop()
	// From here on what this goroutine starts is the command's own.
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels(devstack.StageLabel, stageBench)))
	defer pprof.SetGoroutineLabels(ctx)
	pool, err := postgres.Open(ctx, tg.db, postgres.Options{ApplicationName: "tradebench", MaxConns: 4})
	if err != nil {
		return summary{}, err
	}
	defer pool.Close()
	if o.pgstat {
		if err := pgStatCreate(ctx, pool); err != nil {
			return summary{}, err
		}
	}
	b := &bench{tg: tg, base: tg.base, client: loadtest.Client(o.pairs + o.readers + 8), pool: pool}
	fmt.Printf("started in %s\n", time.Since(t0).Round(100*time.Millisecond))

	pairs, answer, err := b.setUp(ctx, o)
	if err != nil {
		return summary{}, err
	}
	flows, bareFlows := make([]flow, len(pairs)), make([]flow, len(pairs))
	bareURL, err := startBare(ctx, answer)
	if err != nil {
		return summary{}, err
	}
	for i, p := range pairs {
		flows[i], bareFlows[i] = newFlow(b.base, p), newFlow(bareURL, p)
	}

	fmt.Printf("\norders over HTTP: %d pairs, each on one keep-alive connection; an offer (limit sell) and the buy that takes it, in turn\n", len(pairs))
	if o.pace > 0 {
		fmt.Printf("paced: each pair sends its offer and buy on a schedule of its own, all together %.0f orders/s; no bare handler baseline\n", o.pace)
	}
	// The baseline runs half before and half after the stack's run, so
	// that a change in the machine's load during the run touches both.
	// The paced run has none: its baseline is the closed loop's.
	var before, after bareRun
	withBare := o.baseline > 0 && o.pace == 0
	if withBare {
		before = runBare(ctx, b.client, bareFlows, o.baseline/2)
		printRun("bare gin handler, before", before.run)
	}
	m, err := b.measure(ctx, o, pairs, flows)
	if err != nil {
		return summary{}, err
	}
	printRun("full stack", m.run)
	sum := m.summary(o)
	if o.pace > 0 {
		sum.printPace()
	}
	if withBare {
		after = runBare(ctx, b.client, bareFlows, o.baseline/2)
		printRun("bare gin handler, after", after.run)
		accepted := before.run.accepted + after.run.accepted
		sum.bareOrdersPerS = float64(accepted) / (before.run.elapsed + after.run.elapsed).Seconds()
		sum.bareCPU = (before.cpu + after.cpu) / time.Duration(max(accepted, 1))
		fmt.Printf("  full stack / bare handler: %.1f%% of the orders per second\n", 100*m.run.ordersPerSecond()/sum.bareOrdersPerS)
	}
	m.printCPU()
	if withBare {
		fmt.Printf("  bare gin handler: %s CPU an order in this process (the clients and the handler, with the stack idle beside them)\n",
			sum.bareCPU.Round(time.Microsecond))
	}
	m.print(o)
	return sum, nil
}

// bareRun is a run against the bare gin handler and this process's CPU
// during it.
type bareRun struct {
	run tradeRun
	cpu time.Duration
}

func runBare(ctx context.Context, client *http.Client, flows []flow, d time.Duration) bareRun {
	cpu0 := loadtest.ProcessCPU()
	r := runFlows(ctx, client, flows, d, 0)
	return bareRun{run: r, cpu: loadtest.ProcessCPU() - cpu0}
}

// printPace prints the rate the paced run achieved against its target.
func (s summary) printPace() {
	at := "at the target"
	if !s.atTarget() {
		at = fmt.Sprintf("NOT at the target: the stack kept %.0f%% of it", 100*s.ordersPerS/s.rate)
	}
	fmt.Printf("  paced: %.0f orders/s achieved of %.0f (%s)\n", s.ordersPerS, s.rate, at)
}

// setUp logs in and funds two traders a pair, picks the markets and
// stocks each pair with one lot. It returns the pairs and an answer of
// the place route that accepted an order.
func (b *bench) setUp(ctx context.Context, o options) ([]pair, []byte, error) {
	t0 := time.Now()
	traders, err := b.newTraders(ctx, 2*o.pairs)
	if err != nil {
		return nil, nil, fmt.Errorf("log in: %w", err)
	}
	if err := b.fund(ctx, traders); err != nil {
		return nil, nil, fmt.Errorf("fund: %w", err)
	}
	fmt.Printf("%d traders logged in and funded with %d ETH each (dev chain deposit, transfer to the trading account) in %s\n",
		len(traders), fundETH, time.Since(t0).Round(100*time.Millisecond))
	t0 = time.Now()
	seller, err := b.demoSeller()
	if err != nil {
		return nil, nil, err
	}
	// The markets must stay open through both runs and the drain.
	until := time.Now().Add(o.baseline + o.duration + drainWait + 10*time.Second)
	var markets []market
	err = waitFor(ctx, "open markets", 30*time.Second, func() (bool, error) {
		var err error
		markets, err = b.markets(ctx, until, o.pairs)
		return err == nil, nil
	})
	if err != nil {
		return nil, nil, err
	}
	pairs := make([]pair, len(markets))
	var pcs int
	for i, m := range markets {
		pairs[i] = pair{m: m, a: traders[2*i], b: traders[2*i+1]}
		if m.family == topics.InclusionPreconf {
			pcs++
		}
	}
	answer, err := b.stock(ctx, seller, pairs)
	if err != nil {
		return nil, nil, fmt.Errorf("stock: %w", err)
	}
	fmt.Printf("%d pairs stocked with a lot bought from the demo seller (%d inclusion-preconf markets, 21000 gas; %d whole-block markets) in %s\n",
		len(pairs), pcs, len(pairs)-pcs, time.Since(t0).Round(100*time.Millisecond))
	return pairs, answer, nil
}

// measurement is the run through the stack and what the watchers saw.
type measurement struct {
	run      tradeRun
	cpu      time.Duration       // of this process during the run
	svcCPU   time.Duration       // of the cluster's service processes and gateway during the run; 0 for the dev stack
	pgCPU    time.Duration       // of the Postgres server during the run; 0 when unknown
	kafkaCPU time.Duration       // of a real broker's JVM during the run; 0 with kfake
	idle     time.Duration       // of this process in a second without orders before the run
	pgIdle   time.Duration       // of the Postgres server in that second
	visible  map[int64]time.Time // taker order id: trade visible in Postgres
	settled  map[int64]time.Time // taker order id: the settler's transaction began
	fills    map[int64]fillSeen  // taker order id: fill record read
	sockets  map[int64]time.Time // taker order id: its filled update read on the buyer's WebSocket
	reads    *restReaders
	drainErr error
	stmts    []statement // -pgstat: the run's top statements
}

// measure runs the pairs through the stack with the watchers reading
// Postgres, the fills topic and the REST read, then waits until every
// trade of the run is visible.
func (b *bench) measure(ctx context.Context, o options, pairs []pair, flows []flow) (measurement, error) {
	var m measurement
	slots := make([]uint64, 0, len(pairs))
	seen := map[uint64]bool{}
	for _, p := range pairs {
		if !seen[p.m.slot] {
			seen[p.m.slot] = true
			slots = append(slots, p.m.slot)
		}
	}
	lw, err := newLedgerWatch(ctx, b.pool, slots)
	if err != nil {
		return m, err
	}
	fw, err := newFillWatch(b.tg.kafka)
	if err != nil {
		return m, err
	}
	m.reads = &restReaders{}
	traders := make([]*trader, 0, 2*len(pairs))
	for _, p := range pairs {
		traders = append(traders, p.a, p.b)
	}
	sw, err := newSocketWatch(ctx, b.base, traders)
	if err != nil {
		return m, err
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var g errgroup.Group
	g.Go(func() error { sw.run(wctx); return nil })
	g.Go(func() error { return lw.run(wctx, o.poll) })
	g.Go(func() error { return fw.run(wctx) })
	g.Go(func() error { m.reads.run(wctx, b.client, b.base, o.readers, o.readPoll, fw.samples); return nil })
	// The fill watch reads the stocking trades first.
	if err := waitFor(ctx, "the fills topic read", 30*time.Second, func() (bool, error) { return fw.seen.Load() >= int64(len(pairs)), nil }); err != nil {
		return m, err
	}

	// What the stack and the watchers use with no orders: a second idle.
	dataDir := b.tg.dataDir
	idle0, pgIdle0 := loadtest.ProcessCPU(), pgCPUOr0(dataDir)
	time.Sleep(time.Second)
	m.idle, m.pgIdle = loadtest.ProcessCPU()-idle0, pgCPUOr0(dataDir)-pgIdle0

	if o.pgstat {
		if err := pgStatReset(ctx, b.pool); err != nil {
			return m, err
		}
	}
	stopProfile, err := loadtest.StartCPUProfile(o.cpuprofile)
	if err != nil {
		return m, err
	}
	fw.sampleFrom.Store(time.Now().UnixNano())
	cpu0 := loadtest.ProcessCPU()
	pg0, pgOK := postgresCPU(dataDir)
	k0, kOK := kafkaCPU(dataDir, b.tg.kafkaPIDs)
	svc0 := processesCPU(b.tg.services())
	m.run = runFlows(ctx, b.client, flows, o.duration, o.pace)
	m.cpu = loadtest.ProcessCPU() - cpu0
	m.svcCPU = processesCPU(b.tg.services()) - svc0
	if pg1, ok := postgresCPU(dataDir); ok && pgOK {
		m.pgCPU = pg1 - pg0
	}
	if k1, ok := kafkaCPU(dataDir, b.tg.kafkaPIDs); ok && kOK {
		m.kafkaCPU = k1 - k0
	}
	stopProfile()
	fw.sampleFrom.Store(0)
	if o.pgstat {
		if m.stmts, err = pgStatRead(ctx, b.pool); err != nil {
			return m, err
		}
	}

	n := int64(len(m.run.takers))
	m.drainErr = waitFor(ctx, "every trade of the run visible", drainWait, func() (bool, error) {
		return lw.seen.Load() >= n && fw.seen.Load() >= int64(len(pairs))+n && sw.saw(m.run.takers), nil
	})
	stopWatch()
	if err := g.Wait(); err != nil {
		return m, err
	}
	m.visible, m.settled, m.fills, m.sockets = lw.visible, lw.settled, fw.fills, sw.seen()
	return m, nil
}

func (m measurement) print(o options) {
	takers := m.run.takers
	fillAt := make(map[int64]time.Time, len(takers))
	for id := range takers {
		if f, ok := m.fills[id]; ok {
			fillAt[id] = f.at
		}
	}
	fmt.Printf("\nfrom the HTTP answer accepting a buy to its trade visible in the ledger (the trade row, committed with its postings\n"+
		"and balances: its commit time where Postgres notes it, else the read every %s that returned it), %d buys:\n", o.poll, len(takers))
	for _, l := range []struct {
		name       string
		start, end map[int64]time.Time
		withRate   bool // paced: the rate achieved follows
	}{
		{"answer -> ledger (goal p99 <= 100ms)", takers, m.visible, false},
		{"answer -> fill record read", takers, fillAt, false},
		{"fill record read -> ledger", fillAt, m.visible, false},
		{"fill record read -> settler txn begins", fillAt, m.settled, false},
		{"settler txn begins -> ledger", m.settled, m.visible, false},
		{"answer -> WebSocket fill (goal p99 <= 20ms)", takers, m.sockets, true},
	} {
		j := joinLags(l.start, l.end)
		fmt.Printf("  %-44s %s", l.name, loadtest.Distribution(j.lags))
		if o.pace > 0 && l.withRate {
			fmt.Printf("  at %.0f orders/s (paced, target %.0f)", m.run.ordersPerSecond(), o.pace)
		}
		if j.missing > 0 || j.early > 0 {
			fmt.Printf("  missing %d, end before start %d (counted as 0)", j.missing, j.early)
		}
		fmt.Println()
	}
	if m.drainErr != nil {
		fmt.Printf("  not all trades seen: %v\n", m.drainErr)
	}
	r := m.reads
	over := 0
	for _, l := range r.lags {
		if l > time.Second {
			over++
		}
	}
	fmt.Printf("\nfrom the fill record read (fills topic, read_committed) to the trade listed by GET /api/v1/p/<family>/trades\n"+
		"(%d readers, each following one fill at a time, asking every %s), during the run:\n", o.readers, o.readPoll)
	fmt.Printf("  %-38s %s  over 1s: %d, not listed within %s: %d\n", "fill record -> REST read (goal <= 1s)",
		loadtest.Distribution(r.lags), over, maxReadWait, r.timedOut)
	if o.cpuprofile != "" {
		if err := printStages(os.Stdout, o.cpuprofile, m.run.accepted, m.cpu); err != nil {
			fmt.Printf("\nCPU by stage: %v\n", err)
		}
		fmt.Printf("CPU profile of the measured run: go tool pprof -top %s\n", o.cpuprofile)
	}
	if o.pgstat {
		printStatements(os.Stdout, m.stmts, m.run.accepted)
	}
}

// printCPU prints the CPU time an order took during the run, and what
// that allows on this machine's cores.
func (m measurement) printCPU() {
	n := time.Duration(max(m.run.accepted, 1))
	own, svc, pg, kafka := m.cpu/n, m.svcCPU/n, m.pgCPU/n, m.kafkaCPU/n
	if svc > 0 {
		fmt.Printf("  CPU time an order: %s in this process (the clients), %s in the service processes and the gateway, %s in Postgres",
			own.Round(time.Microsecond), svc.Round(time.Microsecond), pg.Round(time.Microsecond))
	} else {
		fmt.Printf("  CPU time an order: %s in this process (every service and the clients), %s in Postgres", own.Round(time.Microsecond), pg.Round(time.Microsecond))
	}
	if kafka > 0 {
		fmt.Printf(", %s in the Kafka brokers", kafka.Round(time.Microsecond))
	}
	if all := own + svc + pg + kafka; all > 0 {
		fmt.Printf("; %d cores would take at most %.0f orders/s", runtime.NumCPU(), float64(runtime.NumCPU())*float64(time.Second)/float64(all))
	}
	fmt.Println()
	fmt.Printf("  idle, in a second without orders before the run (watchers polling): %.0f%% of a core in this process, %.0f%% in Postgres\n",
		100*m.idle.Seconds(), 100*m.pgIdle.Seconds())
}

// summary is the measurement's line of the sweep's table.
func (m measurement) summary(o options) summary {
	n := time.Duration(max(m.run.accepted, 1))
	return summary{kafka: o.kafka, wait: o.wait, rate: o.pace, answer: loadtest.Distribution(m.run.answers), pairs: o.pairs,
		ordersPerS: m.run.ordersPerSecond(), cpu: (m.cpu + m.svcCPU + m.pgCPU + m.kafkaCPU) / n,
		toLedger: loadtest.Distribution(joinLags(m.run.takers, m.visible).lags),
		toSocket: loadtest.Distribution(joinLags(m.run.takers, m.sockets).lags)}
}

// printSweep prints one line a measurement and the highest rate whose
// answer -> ledger p99 met the goal of 100 ms.
func printSweep(results []summary) {
	fmt.Printf("\nsweep (one fresh stack each):\n  %-8s %-11s %6s %10s %22s %26s %24s %14s\n", "kafka", "answer wait", "pairs", "orders/s",
		"answer p50/p99", "answer -> ledger p50/p99", "answer -> WS fill p50/p99", "CPU an order")
	round := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	for _, r := range results {
		fmt.Printf("  %-8s %-11s %6d %10.0f %10s / %-9s %12s / %-11s %11s / %-10s %14s\n", r.kafka, r.wait, r.pairs, r.ordersPerS,
			round(r.answer.P50), round(r.answer.P99), round(r.toLedger.P50), round(r.toLedger.P99),
			round(r.toSocket.P50), round(r.toSocket.P99), r.cpu.Round(time.Microsecond))
		if r.rate > 0 {
			fmt.Printf("    (the line above is paced at %.0f orders/s)\n", r.rate)
		}
	}
	best := bestWithinGoal(results)
	if best == nil {
		fmt.Println("  no run met the goal of answer -> ledger p99 <= 100ms")
		return
	}
	fmt.Printf("  highest rate with answer -> ledger p99 <= 100ms: %.0f orders/s (%d pairs on %s; goal >= %d)\n", best.ordersPerS, best.pairs, best.kafka, rateGoal)
}

// latencyGoal is the goal of the 99th percentile from answer to ledger.
const latencyGoal = 100 * time.Millisecond

// bestWithinGoal is the measurement of the highest rate whose answer ->
// ledger p99 met latencyGoal; nil when none did.
func bestWithinGoal(results []summary) *summary {
	var best *summary
	for i, r := range results {
		if r.toLedger.N > 0 && r.toLedger.P99 <= latencyGoal && (best == nil || r.ordersPerS > best.ordersPerS) {
			best = &results[i]
		}
	}
	return best
}

// pgCPUOr0 is postgresCPU, 0 when it cannot be read.
func pgCPUOr0(dataDir string) time.Duration {
	cpu, _ := postgresCPU(dataDir)
	return cpu
}

func printRun(name string, r tradeRun) {
	fmt.Printf("  %-32s %7.0f orders/s  answer %s  in %s\n", name, r.ordersPerSecond(),
		loadtest.Distribution(r.answers), r.elapsed.Round(10*time.Millisecond))
	if r.shed > 0 {
		fmt.Printf("    %d answers 429 (load shed), each sent again after a backoff\n", r.shed)
	}
	if r.err != nil {
		fmt.Printf("    %d pairs stopped early; the first: %v\n", r.stopped, r.err)
	}
}

// loadAverage is the first three fields of /proc/loadavg, "?" elsewhere.
func loadAverage() string {
	f, err := os.Open("/proc/loadavg")
	if err != nil {
		return "?"
	}
	defer f.Close()
	b, _ := io.ReadAll(f)
	fields := strings.Fields(string(b))
	if len(fields) < 3 {
		return "?"
	}
	return strings.Join(fields[:3], " ")
}
