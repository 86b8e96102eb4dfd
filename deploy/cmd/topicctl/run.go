package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
)

const usage = `usage: topicctl [-brokers host:port,...] [-timeout 30s] <command>

commands:
  apply    create missing catalog topics and align their configs
  list     show every catalog topic with the cluster's partition count and layout
  raise -topic T -partitions N -current-slot S
           raise a slot-partitioned topic family to N partitions; markets up
           to slot S+64 keep their partition

-brokers defaults to $KAFKA_BROKERS, then ` + devBrokers + `.
`

// devBrokers is where make run serves Kafka (KAFKA_ADDR of the dev stack).
// Written out rather than taken from kfakebroker, which would link the
// in-process broker into this binary.
const devBrokers = "127.0.0.1:9092"

// errUsage marks mistakes in the command line, which exit with status 2.
var errUsage = errors.New("usage")

// options are the global flags.
type options struct {
	brokers []string
	timeout time.Duration
}

// run executes one command line and returns the exit status.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	opts, rest, err := parseGlobal(args, getenv, stderr)
	if err == nil {
		err = dispatch(ctx, opts, rest, stdout, stderr)
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "topicctl: %v\n\n%s", err, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "topicctl: %v\n", err)
		return 1
	}
}

func parseGlobal(args []string, getenv func(string) string, stderr io.Writer) (options, []string, error) {
	fs := flag.NewFlagSet("topicctl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	brokers := fs.String("brokers", defaultBrokers(getenv), "comma-separated Kafka brokers")
	timeout := fs.Duration("timeout", 30*time.Second, "time limit of the whole command")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return options{}, nil, err
		}
		return options{}, nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if *timeout <= 0 {
		return options{}, nil, fmt.Errorf("%w: -timeout must be positive", errUsage)
	}
	return options{brokers: splitList(*brokers), timeout: *timeout}, fs.Args(), nil
}

func defaultBrokers(getenv func(string) string) string {
	if v := strings.TrimSpace(getenv("KAFKA_BROKERS")); v != "" {
		return v
	}
	return devBrokers
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func dispatch(ctx context.Context, opts options, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: missing command", errUsage)
	}
	command, args := args[0], args[1:]
	var raise raiseArgs
	switch command {
	case "apply", "list":
		if len(args) > 0 {
			return fmt.Errorf("%w: %s takes no arguments, got %q", errUsage, command, args)
		}
	case "raise":
		var err error
		if raise, err = parseRaise(args, stderr); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: unknown command %q", errUsage, command)
	}
	cl, err := kafka.NewClient(kafka.Config{Brokers: opts.brokers, ClientID: "topicctl"})
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, opts.timeout)
	defer cancel()
	return execute(ctx, command, cl, raise, stdout)
}

func execute(ctx context.Context, command string, cl *kgo.Client, raise raiseArgs, stdout io.Writer) error {
	adm := kadm.NewClient(cl)
	switch command {
	case "apply":
		return apply(ctx, adm, stdout)
	case "list":
		return list(ctx, adm, cl, stdout)
	default:
		return raisePartitions(ctx, adm, cl, raise, stdout)
	}
}
