package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"blockspace.exchange/topics"
)

// EnsureTopics makes the cluster match the catalog entries given: missing
// topics are created with the catalog's partition count and configs, and
// existing topics get the catalog's configs (cleanup.policy, retention.ms).
//
// It never changes the partition count of an existing topic. Lowering is
// impossible in Kafka, and raising moves keys to other partitions; for a
// slot-partitioned topic it would move live markets. Raising is a deliberate
// step: RaisePartitions.
//
// Replication follows the cluster's default.replication.factor.
//
// It returns once every partition of every topic in list answers a
// ListOffsets request: a broker acknowledges CreateTopics when the
// controller has recorded the topic, before the brokers have taken up its
// partitions, and a consumer that asks for offsets in between is told
// UNKNOWN_TOPIC_OR_PARTITION.
func EnsureTopics(ctx context.Context, adm *kadm.Client, list []topics.Topic) error {
	existing, err := existingTopics(ctx, adm, list)
	if err != nil {
		return err
	}
	var update []topics.Topic
	for _, t := range list {
		if existing[t.Name] {
			update = append(update, t)
			continue
		}
		created, err := createTopic(ctx, adm, t)
		if err != nil {
			return err
		}
		if !created {
			update = append(update, t)
		}
	}
	for _, t := range update {
		if err := alignConfigs(ctx, adm, t); err != nil {
			return err
		}
	}
	return waitServed(ctx, adm, list)
}

// waitServed asks every 50ms for the end offsets of list's topics until
// each of their partitions answers.
func waitServed(ctx context.Context, adm *kadm.Client, list []topics.Topic) error {
	names := make([]string, len(list))
	want := 0
	for i, t := range list {
		names[i] = t.Name
		want += int(t.Partitions)
	}
	for {
		// Authorized operations bypass the client's metadata cache, which
		// may still hold a topic created moments ago as unknown.
		listed, err := adm.ListEndOffsets(kadm.WithAuthorizedOps(ctx), names...)
		if err == nil {
			err = listed.Error()
		}
		if n := 0; err == nil {
			listed.Each(func(kadm.ListedOffset) { n++ })
			if n < want {
				err = fmt.Errorf("%d of %d partitions answer", n, want)
			}
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ensure topics: wait for the brokers to serve them: %w (last: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func existingTopics(ctx context.Context, adm *kadm.Client, list []topics.Topic) (map[string]bool, error) {
	names := make([]string, len(list))
	for i, t := range list {
		names[i] = t.Name
	}
	details, err := listFresh(ctx, adm, names)
	if err != nil {
		return nil, fmt.Errorf("ensure topics: list: %w", err)
	}
	existing := make(map[string]bool, len(list))
	for _, name := range names {
		d, ok := details[name]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
		case d.Err != nil:
			return nil, fmt.Errorf("ensure topics: describe %s: %w", name, d.Err)
		default:
			existing[name] = true
		}
	}
	return existing, nil
}

// createTopic creates t and reports false when another process created it
// first, so the caller aligns its configs instead.
func createTopic(ctx context.Context, adm *kadm.Client, t topics.Topic) (bool, error) {
	resp, err := adm.CreateTopic(ctx, t.Partitions, -1, configPointers(t.Configs()), t.Name)
	if err == nil {
		err = resp.Err
	}
	switch {
	case errors.Is(err, kerr.TopicAlreadyExists):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("ensure topics: create %s: %w", t.Name, err)
	}
	return true, nil
}

func alignConfigs(ctx context.Context, adm *kadm.Client, t topics.Topic) error {
	configs := t.Configs()
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	alter := make([]kadm.AlterConfig, 0, len(keys))
	for _, k := range keys {
		v := configs[k]
		alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	resps, err := adm.AlterTopicConfigs(ctx, alter, t.Name)
	if err != nil {
		return fmt.Errorf("ensure topics: configure %s: %w", t.Name, err)
	}
	for _, r := range resps {
		if r.Err != nil {
			return fmt.Errorf("ensure topics: configure %s: %w", r.Name, r.Err)
		}
	}
	return nil
}

func configPointers(configs map[string]string) map[string]*string {
	out := make(map[string]*string, len(configs))
	for k, v := range configs {
		out[k] = &v
	}
	return out
}

// listFresh describes topics with a direct metadata request. A plain
// ListTopics may answer from the client's metadata cache (up to
// MetadataMinAge old), which would hide a topic created or grown moments
// ago; asking for authorized operations bypasses that cache.
func listFresh(ctx context.Context, adm *kadm.Client, names []string) (kadm.TopicDetails, error) {
	return adm.ListTopics(kadm.WithAuthorizedOps(ctx), names...)
}
