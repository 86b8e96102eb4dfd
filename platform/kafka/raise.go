package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/topics"
)

// RaisePartitions raises the partition count of a slot-partitioned topic
// family (the topic that owns a layout, e.g. topics.Orders, and every topic
// that follows it) to newCount, and publishes the layout whose new epoch
// starts beyond every slot that may already have a market (see
// topics.SlotLayout.Raise). Markets created before keep their partition.
//
// The partitions are created before the layout is published, so no layout
// ever names a partition that does not exist. Running it again with the same
// arguments finishes an interrupted raise and otherwise changes nothing.
func RaisePartitions(ctx context.Context, adm *kadm.Client, producer *kgo.Client, topic string, newCount int32, currentSlot uint64) (topics.SlotLayout, error) {
	family := topics.LayoutFamily(topic)
	if len(family) == 0 || family[0].Name != topic {
		return topics.SlotLayout{}, fmt.Errorf("raise partitions: %q does not own a slot layout", topic)
	}
	current, err := Layout(ctx, producer, topic)
	if err != nil {
		return topics.SlotLayout{}, fmt.Errorf("raise partitions: %w", err)
	}
	next, err := current.Raise(currentSlot, newCount)
	if err != nil {
		return topics.SlotLayout{}, fmt.Errorf("raise partitions: %w", err)
	}
	if err := growFamily(ctx, adm, family, newCount); err != nil {
		return topics.SlotLayout{}, err
	}
	if layoutsEqual(current, next) {
		return next, nil
	}
	if err := PublishLayout(ctx, producer, next); err != nil {
		return topics.SlotLayout{}, fmt.Errorf("raise partitions: %w", err)
	}
	return next, nil
}

// growFamily brings every topic of the family to at least count partitions.
func growFamily(ctx context.Context, adm *kadm.Client, family []topics.Topic, count int32) error {
	names := make([]string, len(family))
	for i, t := range family {
		names[i] = t.Name
	}
	details, err := listFresh(ctx, adm, names)
	if err != nil {
		return fmt.Errorf("raise partitions: list: %w", err)
	}
	var grow []string
	for _, name := range names {
		d, ok := details[name]
		if !ok || d.Err != nil {
			return fmt.Errorf("raise partitions: topic %s is not usable (run topicctl apply): %v", name, d.Err)
		}
		if int32(len(d.Partitions)) < count {
			grow = append(grow, name)
		}
	}
	if len(grow) == 0 {
		return nil
	}
	resps, err := adm.UpdatePartitions(ctx, int(count), grow...)
	if err != nil {
		return fmt.Errorf("raise partitions: create partitions: %w", err)
	}
	for _, r := range resps {
		if r.Err != nil {
			return fmt.Errorf("raise partitions: %s to %d: %w", r.Topic, count, r.Err)
		}
	}
	return nil
}

func layoutsEqual(a, b topics.SlotLayout) bool {
	if a.Topic != b.Topic || len(a.Epochs) != len(b.Epochs) {
		return false
	}
	for i := range a.Epochs {
		if a.Epochs[i] != b.Epochs[i] {
			return false
		}
	}
	return true
}
