package topics

import (
	"slices"
	"strconv"
	"testing"
)

func TestCatalogIsConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, topic := range Catalog() {
		if seen[topic.Name] {
			t.Errorf("topic %s listed twice", topic.Name)
		}
		seen[topic.Name] = true
		if topic.Partitions < 1 || topic.Purpose == "" || topic.Key == "" || len(topic.Types) == 0 {
			t.Errorf("topic %s is incomplete: %+v", topic.Name, topic)
		}
		if topic.Cleanup == Compact && topic.Retention != Forever {
			t.Errorf("compacted topic %s drops records by age", topic.Name)
		}
		if topic.Cleanup == Delete && topic.Retention <= 0 {
			t.Errorf("topic %s deletes records but has retention %v", topic.Name, topic.Retention)
		}
	}
}

// Topics that follow a layout must be created like its owner, or the
// matcher's output for a slot would have no partition to land on.
func TestSlotTopicsFollowAnOwnedLayout(t *testing.T) {
	for _, topic := range Catalog() {
		switch topic.Partitioning {
		case BySlot:
			owner, ok := Lookup(topic.Layout)
			if !ok || owner.Layout != owner.Name {
				t.Errorf("%s follows layout %q, which no topic owns", topic.Name, topic.Layout)
				continue
			}
			if owner.Partitions != topic.Partitions {
				t.Errorf("%s has %d partitions, its layout owner %s has %d", topic.Name, topic.Partitions, owner.Name, owner.Partitions)
			}
		case ByKeyHash:
			if topic.Layout != "" {
				t.Errorf("key-hashed %s names layout %q", topic.Name, topic.Layout)
			}
		default:
			t.Errorf("%s has no partitioning", topic.Name)
		}
	}
	family := LayoutFamily(Orders)
	if len(family) != 4 || family[0].Name != Orders {
		t.Errorf("orders family %v, want orders first and four topics", family)
	}
}

func TestMessageTypesBelongToOneTopic(t *testing.T) {
	owner := map[string]string{}
	for _, m := range MessageTypes() {
		if err := validateType(m.Name); err != nil {
			t.Errorf("type name %q: %v", m.Name, err)
		}
		if prev, dup := owner[m.Name]; dup {
			t.Errorf("type %s carried by %s and %s", m.Name, prev, m.Topic)
		}
		owner[m.Name] = m.Topic
		if _, ok := Lookup(m.Topic); !ok {
			t.Errorf("type %s names unknown topic %s", m.Name, m.Topic)
		}
		if m.Summary == "" || m.Producer == "" {
			t.Errorf("type %s is undocumented", m.Name)
		}
	}
	for _, name := range []string{TypeOrderPlace, TypeClockTick, TypeTradeExecuted, TypeSlotLayout, TypeOrderflowRefund} {
		if _, ok := LookupType(name); !ok {
			t.Errorf("LookupType(%q) found nothing", name)
		}
	}
	orders, _ := Lookup(Orders)
	if !slices.Contains(orders.Types, TypeClockTick) || !slices.Contains(orders.Types, TypeOrderCancelAll) {
		t.Errorf("orders carries %v", orders.Types)
	}
}

func TestTopicConfigs(t *testing.T) {
	orders, _ := Lookup(Orders)
	cfg := orders.Configs()
	if cfg["cleanup.policy"] != "delete" || cfg["retention.ms"] != strconv.Itoa(7*24*3600*1000) {
		t.Errorf("orders configs %v", cfg)
	}
	layouts, _ := Lookup(SlotLayouts)
	cfg = layouts.Configs()
	if cfg["cleanup.policy"] != "compact" || cfg["retention.ms"] != "-1" || len(cfg) != 2 {
		t.Errorf("slot-layouts configs %v", cfg)
	}
	snapshots, _ := Lookup(MatcherSnapshots)
	cfg = snapshots.Configs()
	if cfg["cleanup.policy"] != "compact" || cfg["segment.ms"] != "3600000" || cfg["min.cleanable.dirty.ratio"] != "0.1" {
		t.Errorf("matcher-snapshots configs %v", cfg)
	}
}

func TestCatalogReturnsCopies(t *testing.T) {
	c := Catalog()
	c[0].Types[0] = "changed.by_caller"
	c[0].Partitions = 1
	if again := Catalog(); again[0].Types[0] == "changed.by_caller" || again[0].Partitions == 1 {
		t.Fatal("Catalog shares state between callers")
	}
}
