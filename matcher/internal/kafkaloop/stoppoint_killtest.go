//go:build killtest

package kafkaloop

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// stopPoint returns the loop's beforeEnd that stops the process where
// stopAfterEnv says, or nil when the variable is not set.
func stopPoint(l *Loop) (func() error, error) {
	v, ok := os.LookupEnv(stopAfterEnv)
	if !ok {
		return nil, nil
	}
	after, err := strconv.ParseInt(v, 10, 64)
	if err != nil || after < 0 {
		return nil, fmt.Errorf("matcher kafka config: %s=%q: want a count of input records", stopAfterEnv, v)
	}
	var outputs int64
	stopped := false
	return func() error {
		produced := l.stats.Outputs.Load() > outputs
		outputs = l.stats.Outputs.Load()
		if stopped || !produced || l.stats.Committed.Load() < after {
			return nil
		}
		stopped = true
		if err := l.sess.Client().Flush(context.Background()); err != nil {
			return fmt.Errorf("flush before the stop point: %w", err)
		}
		fmt.Fprintf(os.Stderr, "%s=%d: stopping in a transaction with outputs, %d input records committed\n",
			stopAfterEnv, after, l.stats.Committed.Load())
		return syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	}, nil
}
