package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

func apply(ctx context.Context, adm *kadm.Client, stdout io.Writer) error {
	catalog := topics.Catalog()
	if err := kafka.EnsureTopics(ctx, adm, catalog); err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	fmt.Fprintf(stdout, "applied %d topics\n", len(catalog))
	return nil
}

// list prints the catalog beside the cluster's state. A partition count that
// differs from the catalog is normal after a raise; "missing" means apply
// has not run.
func list(ctx context.Context, adm *kadm.Client, cl *kgo.Client, stdout io.Writer) error {
	catalog := topics.Catalog()
	names := make([]string, len(catalog))
	for i, t := range catalog {
		names[i] = t.Name
	}
	details, err := adm.ListTopics(kadm.WithAuthorizedOps(ctx), names...)
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	layouts, err := kafka.ReadLayouts(ctx, cl)
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITIONS\tCATALOG\tCLEANUP\tRETENTION\tPARTITIONING\tLAYOUT")
	for _, t := range catalog {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", t.Name, clusterPartitions(details[t.Name]),
			t.Partitions, t.Cleanup, retention(t.Retention), t.Partitioning, layoutText(t, layouts))
	}
	return w.Flush()
}

func clusterPartitions(d kadm.TopicDetail) string {
	if d.Err != nil || len(d.Partitions) == 0 {
		return "missing"
	}
	return fmt.Sprint(len(d.Partitions))
}

func retention(d time.Duration) string {
	if d == topics.Forever {
		return "forever"
	}
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// layoutText shows a family's epochs as "0:16 11000096:32" on its owner.
func layoutText(t topics.Topic, layouts map[string]topics.SlotLayout) string {
	if t.Partitioning != topics.BySlot {
		return "-"
	}
	if t.Layout != t.Name {
		return "follows " + t.Layout
	}
	l, ok := layouts[t.Name]
	if !ok {
		l, _ = topics.DefaultLayout(t.Name)
	}
	parts := make([]string, len(l.Epochs))
	for i, e := range l.Epochs {
		parts[i] = fmt.Sprintf("%d:%d", e.FromSlot, e.Partitions)
	}
	return strings.Join(parts, " ")
}

// raiseArgs are the flags of the raise command.
type raiseArgs struct {
	topic       string
	partitions  int
	currentSlot uint64
}

func parseRaise(args []string, stderr io.Writer) (raiseArgs, error) {
	fs := flag.NewFlagSet("raise", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var r raiseArgs
	fs.StringVar(&r.topic, "topic", "", "slot-partitioned topic that owns a layout, e.g. orders")
	fs.IntVar(&r.partitions, "partitions", 0, "new partition count")
	slot := fs.Int64("current-slot", -1, "the chain's current slot")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return raiseArgs{}, err
		}
		return raiseArgs{}, fmt.Errorf("%w: raise: %v", errUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		return raiseArgs{}, fmt.Errorf("%w: raise: unexpected arguments %q", errUsage, fs.Args())
	case r.topic == "":
		return raiseArgs{}, fmt.Errorf("%w: raise: -topic is required", errUsage)
	case r.partitions < 1 || r.partitions > 1<<20:
		return raiseArgs{}, fmt.Errorf("%w: raise: -partitions must be from 1 to %d", errUsage, 1<<20)
	case *slot < 0:
		return raiseArgs{}, fmt.Errorf("%w: raise: -current-slot is required (the chain's head slot, not a guess)", errUsage)
	}
	r.currentSlot = uint64(*slot)
	return r, nil
}

func raisePartitions(ctx context.Context, adm *kadm.Client, cl *kgo.Client, r raiseArgs, stdout io.Writer) error {
	l, err := kafka.RaisePartitions(ctx, adm, cl, r.topic, int32(r.partitions), r.currentSlot)
	if err != nil {
		return err
	}
	last := l.Epochs[len(l.Epochs)-1]
	fmt.Fprintf(stdout, "%s: %d partitions from slot %d (%d epochs)\n", r.topic, last.Partitions, last.FromSlot, len(l.Epochs))
	return nil
}
