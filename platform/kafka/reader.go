package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// NewReader returns a client of its own that reaches the brokers of cl
// the same way (seeds, client id, TLS or dialer, SASL) and reads committed
// records only, with opts applied last (topics, start offsets). A service
// that was handed a producing client uses it to follow topics without
// disturbing that client's state; close it when done.
func NewReader(cl *kgo.Client, opts ...kgo.Opt) (*kgo.Client, error) {
	base := append(dialOpts(cl), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	r, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("new kafka reader: %w", err)
	}
	return r, nil
}
