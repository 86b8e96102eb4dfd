package topics

import (
	"fmt"
	"strconv"
)

// SlotKey returns the record key of a slot-partitioned topic: the slot as a
// decimal string, readable in any tool. The key identifies the market; it
// does not choose the partition (see SlotLayout).
func SlotKey(slot uint64) []byte {
	return strconv.AppendUint(nil, slot, 10)
}

// ParseSlotKey parses a key written by SlotKey. It accepts only the
// canonical form (no sign, no leading zeros), so one slot has one key and
// compaction keeps exactly one record per slot.
func ParseSlotKey(key []byte) (uint64, error) {
	if len(key) == 0 {
		return 0, fmt.Errorf("parse slot key: empty key")
	}
	if len(key) > 1 && key[0] == '0' {
		return 0, fmt.Errorf("parse slot key %q: leading zero", key)
	}
	for _, c := range key {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("parse slot key %q: not a decimal number", key)
		}
	}
	slot, err := strconv.ParseUint(string(key), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse slot key %q: %w", key, err)
	}
	return slot, nil
}
