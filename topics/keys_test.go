package topics

import "testing"

func TestSlotKey(t *testing.T) {
	for _, slot := range []uint64{0, 7, 11000000, ^uint64(0)} {
		got, err := ParseSlotKey(SlotKey(slot))
		if err != nil || got != slot {
			t.Errorf("ParseSlotKey(SlotKey(%d)) = %d, %v", slot, got, err)
		}
	}
	if string(SlotKey(11000000)) != "11000000" {
		t.Errorf("SlotKey(11000000) = %q", SlotKey(11000000))
	}
	for _, bad := range []string{"", "01", "-1", "+1", "1.0", " 1", "0x10", "18446744073709551616"} {
		if slot, err := ParseSlotKey([]byte(bad)); err == nil {
			t.Errorf("ParseSlotKey(%q) = %d, want an error", bad, slot)
		}
	}
}
