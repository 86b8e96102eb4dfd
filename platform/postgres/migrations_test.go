package postgres

import "testing"

func TestLineOf(t *testing.T) {
	t.Parallel()
	sql := "CREATE TABLE a (id int);\nINSERT INTO b VALUES (1);\n-- é\nSELECT x;"
	tests := []struct {
		name     string
		position int32
		want     int
	}{
		{"no position", 0, 0},
		{"first line", 1, 1},
		{"second line", 26, 2},
		{"after a multi-byte character", 58, 4},
		{"past the end", 1000, 0},
	}
	for _, tt := range tests {
		if got := lineOf(sql, tt.position); got != tt.want {
			t.Errorf("%s: lineOf(%d) = %d, want %d", tt.name, tt.position, got, tt.want)
		}
	}
}
