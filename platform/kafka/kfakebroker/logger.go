package kfakebroker

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
)

// kfakeLogger forwards kfake's printf-style log lines to slog. kfake logs
// every request at its info level, so info is lowered to debug.
//
// During Close it also keeps the error lines, because kfake reports a failed
// save to disk only through its logger and Close must return that failure.
// kfake logs from its own goroutines, hence the mutex.
type kfakeLogger struct {
	log *slog.Logger

	mu        sync.Mutex
	capturing bool
	errs      []error
}

func newKfakeLogger(log *slog.Logger) *kfakeLogger {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &kfakeLogger{log: log.With("component", "kfake")}
}

func (l *kfakeLogger) Logf(level kfake.LogLevel, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	switch level {
	case kfake.LogLevelError:
		l.keep(msg)
		l.log.Error(msg)
	case kfake.LogLevelWarn:
		l.log.Warn(msg)
	default:
		l.log.Debug(msg)
	}
}

func (l *kfakeLogger) keep(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.capturing {
		l.errs = append(l.errs, errors.New(msg))
	}
}

func (l *kfakeLogger) startCapture() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.capturing = true
	l.errs = nil
}

func (l *kfakeLogger) captured() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}
