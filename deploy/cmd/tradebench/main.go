// Command tradebench measures trading through the full dev stack
// (embedded Kafka and Postgres in a temporary directory, every service,
// loopback HTTP):
//
//	go run ./deploy/cmd/tradebench [-pairs 16,32,64] [-duration 10s] [-cpuprofile cpu.pprof]
//
// Traders log in with their wallets and are funded through the ledger: a
// deposit on the dev chain, credited by the deposit watcher, then a
// transfer to the trading account. Each pair of traders gets a market of
// its own (inclusion preconf first, then whole block) and one lot of it
// from the demo seller. Then each pair trades its lot back and forth
// over one keep-alive connection: the holder offers the lot (a limit sell
// that rests), the other one buys it (a limit buy that takes it), and
// they swap. A pair has its market to itself, so every buy fills at once
// and no order meets one of its own account.
//
// It prints orders accepted per second over HTTP, next to the same
// clients against a bare gin handler of the same request shape measured
// in the same run; the time from the HTTP answer that accepted a buy to
// its trade being visible in the ledger (the trade row, committed with its
// postings and balances in one transaction: the commit's time, which the
// private Postgres notes, read by a watch that polls every -poll); the
// same split at the fill record on the
// fills topic; and the lag from the fill record to the trade in the
// public REST read (GET /api/v1/p/<family>/trades), sampled by -readers
// readers; and the time from that answer to the buy's filled update on the
// buyer's own WebSocket (each trader logged in and subscribed to
// accountOrderUpdate). Each measurement runs once for each -answer-wait
// (ORDER_ANSWER_WAIT): with the wait, an answer carries the matcher's
// decision; without it, the answer is pending and the WebSocket tells. It measures once per number of pairs, each on a fresh stack,
// and ends with a table of the rates and the highest one whose 99th
// percentile from answer to ledger stayed within 100 ms.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"
)

// options are the command's flags.
type options struct {
	sweep      []int // numbers of pairs, one measurement each
	pairs      int   // of the measurement in progress
	duration   time.Duration
	baseline   time.Duration
	poll       time.Duration
	readers    int
	readPoll   time.Duration
	cpuprofile string
	brokers    []string // -kafka: the brokers to measure on, each a sweep
	kafka      string   // of the measurement in progress
	// waits are the -answer-wait values (ORDER_ANSWER_WAIT), each a sweep;
	// wait is the one of the measurement in progress.
	waits []string
	wait  string
	// rate is -rate: orders/s of the paced measurement after each sweep, 0
	// for none; pace is the rate of the measurement in progress, 0 for the
	// closed loop.
	rate, pace float64
	pgstat     bool // -pgstat: pg_stat_statements of the measured run
}

// kafkaNames says which broker each -kafka value means; the keys are the
// dev stack's EMBEDDED_KAFKA values.
var kafkaNames = map[string]string{
	"kfake":  "kfake, in this process (make run)",
	"apache": "Apache Kafka, one local KRaft node (make run-kafka); its JVM's CPU is counted",
}

func main() {
	var o options
	var pairs string
	flag.StringVar(&pairs, "pairs", "16,32,64", "numbers of trading pairs to measure with, comma-separated, each on a fresh stack; a pair has a market and a keep-alive connection of its own")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "length of the measured run through the stack")
	flag.DurationVar(&o.baseline, "baseline", 4*time.Second, "length of the baseline against a bare gin handler, half before and half after the run through the stack")
	flag.DurationVar(&o.poll, "poll", 20*time.Millisecond, "how often Postgres is asked for new trades; a trade's visible time is its commit time where the server notes it (the dev stack's, the production shape's), else the time of the read")
	flag.IntVar(&o.readers, "readers", 4, "concurrent REST readers sampling the lag from fill record to REST read")
	flag.DurationVar(&o.readPoll, "read-poll", 5*time.Millisecond, "how often a REST reader asks for the trade it waits for")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of this process (the stack and the clients) during the measured run to this file")
	var brokers string
	flag.StringVar(&brokers, "kafka", "embedded,real", "brokers to measure on, comma-separated, each over the whole -pairs sweep: embedded (kfake in the process, as make run) and real (Apache Kafka from the jars of scripts/ensure-kafka.sh, as make run-kafka); none for no dev stack run")
	var instances string
	flag.StringVar(&instances, "cluster", "", "instances of the matcher and of the settler on the production shape (make run-cluster: three brokers, a process per service, the gateway), comma-separated, each over the whole -pairs sweep after the dev stack's; empty for none")
	var waits string
	flag.StringVar(&waits, "answer-wait", "200ms,0", "ORDER_ANSWER_WAIT values to measure with, comma-separated, each over the whole -pairs sweep: how long an order's answer waits for the matcher's decision (0: not at all)")
	flag.Float64Var(&o.rate, "rate", 2000, "orders/s of one more measurement after each -pairs sweep, at its largest pairs count, with every pair paced so that all together send this rate; 0 for none")
	flag.BoolVar(&o.pgstat, "pgstat", false, "start the private Postgres with pg_stat_statements and print the statements that took the most execution time an order in the measured run (dev stack only)")
	flag.Parse()
	var err error
	if o.sweep, err = parsePairs(pairs); err == nil {
		o.brokers, err = parseBrokers(brokers)
	}
	if err == nil {
		o.waits, err = parseWaits(waits)
	}
	if err == nil {
		err = o.addCluster(instances)
	}
	if err == nil {
		err = o.validate()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tradebench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	results, err := sweep(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tradebench:", err)
		os.Exit(1)
	}
	printSweep(results)
	printGoals(os.Stdout, results)
}

// sweep measures every broker and answer wait over the -pairs sweep, each
// sweep followed by the paced measurement at its largest pairs count.
func sweep(ctx context.Context, o options) ([]summary, error) {
	var results []summary
	for _, k := range o.brokers {
		o.kafka = k
		for _, w := range o.waits {
			o.wait = w
			o.pace = 0
			for _, n := range o.sweep {
				o.pairs = n
				r, err := run(ctx, o)
				if err != nil {
					return nil, err
				}
				results = append(results, r)
			}
			if o.rate == 0 {
				continue
			}
			o.pairs, o.pace = slices.Max(o.sweep), o.rate
			r, err := run(ctx, o)
			if err != nil {
				return nil, err
			}
			results = append(results, r)
		}
	}
	return results, nil
}

// parseWaits reads the -answer-wait list: durations from 0 to 5s.
func parseWaits(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		d, err := time.ParseDuration(f)
		if err != nil || d < 0 || d > 5*time.Second {
			return nil, fmt.Errorf("-answer-wait %q: %q is not a duration from 0 to 5s", s, f)
		}
		out = append(out, f)
	}
	return out, nil
}

// parsePairs reads the -pairs list.
func parsePairs(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("-pairs %q: %q is not a number", s, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseBrokers reads the -kafka list into EMBEDDED_KAFKA values.
func parseBrokers(s string) ([]string, error) {
	var out []string
	if s == "none" {
		return nil, nil
	}
	for _, f := range strings.Split(s, ",") {
		switch strings.TrimSpace(f) {
		case "embedded":
			out = append(out, "kfake")
		case "real":
			out = append(out, "apache")
		default:
			return nil, fmt.Errorf("-kafka %q: %q is neither embedded nor real (or none alone)", s, f)
		}
	}
	return out, nil
}

// addCluster adds a cluster:<n> target to o.brokers for each instance
// count of the -cluster list.
func (o *options) addCluster(s string) error {
	if s == "" {
		return nil
	}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 4 {
			return fmt.Errorf("-cluster %q: %q is not an instance count from 1 to 4", s, f)
		}
		o.brokers = append(o.brokers, "cluster:"+strconv.Itoa(n))
	}
	return nil
}

// isCluster reports whether a target of o.brokers is the production shape.
func isCluster(k string) bool {
	_, ok := clusterInstances(k)
	return ok
}

// kafkaName says what a target of o.brokers is.
func kafkaName(k string) string {
	if n, ok := clusterInstances(k); ok {
		return fmt.Sprintf("the production shape: %d matcher(s) and %d settler(s) as processes, three Apache Kafka brokers; every process's CPU is counted", n, n)
	}
	return kafkaNames[k]
}

func (o options) validate() error {
	if len(o.brokers) == 0 {
		return errors.New("-kafka none and no -cluster: nothing to measure")
	}
	for _, n := range o.sweep {
		if n < 1 || n > 90 {
			return fmt.Errorf("-pairs %d: want 1 to 90 (one open market each)", n)
		}
	}
	switch {
	case o.duration < time.Second || o.duration > 5*time.Minute:
		return fmt.Errorf("-duration %s: want 1s to 5m", o.duration)
	case o.baseline < 0 || o.baseline > time.Minute:
		return fmt.Errorf("-baseline %s: want 0 (none) to 1m", o.baseline)
	case o.poll < 100*time.Microsecond || o.readPoll < 100*time.Microsecond:
		return fmt.Errorf("-poll %s, -read-poll %s: want at least 100µs", o.poll, o.readPoll)
	case o.readers < 0 || o.readers > 64:
		return fmt.Errorf("-readers %d: want 0 to 64", o.readers)
	case o.rate != 0 && !(o.rate >= 10 && o.rate <= 100_000): // NaN too
		return fmt.Errorf("-rate %g: want 0 (no paced run) or 10 to 100000 orders/s", o.rate)
	case o.pgstat && slices.ContainsFunc(o.brokers, isCluster):
		return errors.New("-pgstat with -cluster: the production shape's Postgres is started without pg_stat_statements; measure the dev stack alone (-kafka) with -pgstat")
	}
	return nil
}
