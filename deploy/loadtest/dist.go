package loadtest

import (
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"
)

// Dist is the distribution of a set of durations: how many, the median,
// the 99th percentile and the largest.
type Dist struct {
	N             int
	P50, P99, Max time.Duration
}

// Distribution sorts d in place and returns its distribution.
func Distribution(d []time.Duration) Dist {
	if len(d) == 0 {
		return Dist{}
	}
	slices.Sort(d)
	return Dist{N: len(d), P50: Percentile(d, 0.50), P99: Percentile(d, 0.99), Max: d[len(d)-1]}
}

func (d Dist) String() string {
	r := func(x time.Duration) time.Duration { return x.Round(100 * time.Microsecond) }
	return fmt.Sprintf("p50 %8s  p99 %8s  max %8s  (%d)", r(d.P50), r(d.P99), r(d.Max), d.N)
}

// ProcessCPU is the user and system CPU time this process has used so
// far: with other work on the machine it tells the cost of a request
// where a rate only tells the share of the CPU that was got.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// StartCPUProfile starts a CPU profile of this process written to path
// ("" profiles nothing); the returned function ends it.
func StartCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
