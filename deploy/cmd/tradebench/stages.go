package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/google/pprof/profile"

	"blockspace.exchange/deploy/devstack"
)

// stageBench is the stage of the command's own clients and watchers: the
// goroutine that runs a measurement carries it from the moment the stack
// is up, and so every client, reader and connection it starts.
const stageBench = "tradebench"

// stageNames is the CPU budget's order of the stage label's values and
// what each one counts; a value not listed follows them, unlabelled last.
var stageNames = []struct{ stage, name string }{
	{devstack.StageIngress, "ingress (HTTP order entry)"},
	{devstack.StageMatcher, "matcher"},
	{devstack.StageSettler, "settler"},
	{devstack.StageQuery, "query-api (feeds, WebSocket, REST)"},
	{devstack.StageRelay, "orderflow relay"},
	{devstack.StageBroker, "embedded broker (kfake)"},
	{stageBench, "tradebench clients and watchers"},
}

// stageCPU is one line of the CPU budget.
type stageCPU struct {
	name string
	cpu  time.Duration
}

// profileStages sums the CPU time of a profile's samples by the value of
// their stage label; the unlabelled (GC, the runtime, what no stage
// started) are under "". The profile is read with pprof's own reader,
// github.com/google/pprof/profile.
func profileStages(r io.Reader) (map[string]time.Duration, error) {
	p, err := profile.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("read the CPU profile: %w", err)
	}
	at := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool { return t.Type == "cpu" && t.Unit == "nanoseconds" })
	if at < 0 {
		return nil, fmt.Errorf("read the CPU profile: no cpu/nanoseconds values among %d sample types", len(p.SampleType))
	}
	sums := map[string]time.Duration{}
	for _, s := range p.Sample {
		var stage string
		if v := s.Label[devstack.StageLabel]; len(v) > 0 {
			stage = v[0]
		}
		sums[stage] += time.Duration(s.Value[at])
	}
	return sums, nil
}

// stageBudget orders the sums: the known stages (each, even at 0), then
// any other value by name, then the unlabelled.
func stageBudget(sums map[string]time.Duration) []stageCPU {
	var out []stageCPU
	known := map[string]bool{"": true}
	for _, s := range stageNames {
		known[s.stage] = true
		out = append(out, stageCPU{s.name, sums[s.stage]})
	}
	var rest []stageCPU
	for stage, cpu := range sums {
		if !known[stage] {
			rest = append(rest, stageCPU{stage, cpu})
		}
	}
	slices.SortFunc(rest, func(a, b stageCPU) int { return cmp.Compare(a.name, b.name) })
	return append(append(out, rest...), stageCPU{"other/unlabelled (GC, runtime)", sums[""]})
}

// printStages prints the CPU budget of one order by stage from the
// profile at path; measured is the process's CPU of the run (getrusage),
// which the profile's samples should come close to.
func printStages(w io.Writer, path string, orders int, measured time.Duration) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sums, err := profileStages(f)
	if err != nil {
		return err
	}
	budget := stageBudget(sums)
	var total time.Duration
	for _, s := range budget {
		total += s.cpu
	}
	n := time.Duration(max(orders, 1))
	fmt.Fprintf(w, "\nCPU of this process an order by stage (pprof label %q; the profile's samples hold %s of the %s measured):\n",
		devstack.StageLabel, total.Round(time.Millisecond), measured.Round(time.Millisecond))
	for _, s := range budget {
		fmt.Fprintf(w, "  %-36s %8.1f µs  %5.1f%%\n", s.name, float64(s.cpu/n)/1e3, 100*s.cpu.Seconds()/max(total.Seconds(), 1e-9))
	}
	fmt.Fprintf(w, "  %-36s %8.1f µs\n", "all", float64(total/n)/1e3)
	return nil
}
