// Command kraftarchive trains the class-data sharing archive that the JVMs
// of local Apache Kafka nodes map to start with less CPU (see package
// kraft), unless the cache of jars has it already, and prints its path.
// scripts/ensure-kafka.sh runs it after resolving the jars; it takes the
// jars from $KAFKA_LIBS as package kraft does.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"blockspace.exchange/platform/kafka/kraft"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "kraftarchive:", err)
		os.Exit(1)
	}
}

// run trains on a test broker's settings, which is what starts most often.
func run(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "kraftarchive-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path, err := kraft.TrainArchive(ctx, kraft.TestConfig(dir))
	if err != nil {
		return err
	}
	fmt.Println(path)
	return nil
}
