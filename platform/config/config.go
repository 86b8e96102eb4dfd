// Package config reads service configuration from the environment. A
// Reader collects every problem so a misconfigured process reports all of
// them at once, each naming the variable and the expected form.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"
)

// Reader reads variables through lookup (os.LookupEnv in main, a map in
// tests) and remembers the errors.
type Reader struct {
	lookup func(string) (string, bool)
	errs   []error
}

// FromEnv reads the process environment.
func FromEnv() *Reader { return &Reader{lookup: os.LookupEnv} }

// FromMap reads a fixed set of variables.
func FromMap(m map[string]string) *Reader {
	return &Reader{lookup: func(k string) (string, bool) { v, ok := m[k]; return v, ok }}
}

// String returns the variable or def when unset or empty.
func (r *Reader) String(name, def string) string {
	if v, ok := r.lookup(name); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	return def
}

// StringOrEmpty returns the variable, "" when it is set but empty, and
// def only when it is unset: for settings where empty means "off".
func (r *Reader) StringOrEmpty(name, def string) string {
	if v, ok := r.lookup(name); ok {
		return strings.TrimSpace(v)
	}
	return def
}

// Int returns the variable as an integer within [min, max].
func (r *Reader) Int(name string, def, min, max int) int {
	raw := r.String(name, "")
	if raw == "" {
		return def
	}
	v, err := strconv.Atoi(raw)
	if err != nil || v < min || v > max {
		r.errs = append(r.errs, fmt.Errorf("%s=%q: want an integer from %d to %d", name, raw, min, max))
		return def
	}
	return v
}

// Bool returns the variable as true or false (also 1/0, yes/no, on/off).
func (r *Reader) Bool(name string, def bool) bool {
	raw := r.String(name, "")
	switch strings.ToLower(raw) {
	case "":
		return def
	case "true", "1", "yes", "on":
		return true
	case "false", "0", "no", "off":
		return false
	}
	r.errs = append(r.errs, fmt.Errorf("%s=%q: want true or false", name, raw))
	return def
}

// Duration returns the variable as a Go duration (e.g. 500ms, 5s) within
// [min, max].
func (r *Reader) Duration(name string, def, min, max time.Duration) time.Duration {
	raw := r.String(name, "")
	if raw == "" {
		return def
	}
	v, err := time.ParseDuration(raw)
	if err != nil || v < min || v > max {
		r.errs = append(r.errs, fmt.Errorf("%s=%q: want a duration from %s to %s, such as 5s", name, raw, min, max))
		return def
	}
	return v
}

// List returns a comma-separated variable as trimmed, non-empty items.
func (r *Reader) List(name string) []string {
	var out []string
	for _, item := range strings.Split(r.String(name, ""), ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// LogLevel returns the variable as a slog level (debug, info, warn, error).
func (r *Reader) LogLevel(name string, def slog.Level) slog.Level {
	raw := r.String(name, "")
	if raw == "" {
		return def
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(raw)); err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s=%q: want debug, info, warn or error", name, raw))
		return def
	}
	return l
}

// Fail records a problem found by the caller's own validation.
func (r *Reader) Fail(format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf(format, args...))
}

// Err returns every problem found, or nil.
func (r *Reader) Err() error {
	if len(r.errs) == 0 {
		return nil
	}
	return fmt.Errorf("configuration: %w", errors.Join(r.errs...))
}
