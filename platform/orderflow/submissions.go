package orderflow

import (
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/platform/jsonrpc"
	"blockspace.exchange/platform/metrics"
)

// Outcomes of a submission (orderflow_submissions_total's outcome).
const (
	OutcomeAccepted  = "accepted"  // published
	OutcomeInvalid   = "invalid"   // refused for what was sent: a bad transaction, parameter or method
	OutcomeDuplicate = "duplicate" // acknowledged without publishing: the same submission was accepted just before
	OutcomeRefused   = "refused"   // refused for who sent it: a rate limit, an unknown key, a missing role
	OutcomeError     = "error"     // not taken for a failure of ours: the log or the node unavailable, a bug
)

// methodOther stands for every method outside submissionMethods.
const methodOther = "other"

// submissionMethods are the methods the originator and searcher
// endpoints serve; any other name is counted as "other", so that a
// client cannot grow the label set.
var submissionMethods = []string{
	"eth_sendRawTransaction", "eth_sendPrivateRawTransaction", "eth_sendPrivateTransaction",
	MethodSendBundle, MethodCancelBundle,
}

// Submissions counts the submissions of originators and searchers by
// method and outcome. One set serves every endpoint of a process; a nil
// *Submissions counts nothing.
type Submissions struct {
	total *prometheus.CounterVec
}

// NewSubmissions registers the submission counter on reg, or reuses the
// one registered there.
func NewSubmissions(reg prometheus.Registerer) (*Submissions, error) {
	v, err := metrics.CounterVec(reg, prometheus.CounterOpts{Name: "orderflow_submissions_total",
		Help: "Orderflow JSON-RPC submissions by method and outcome (accepted, invalid, duplicate, refused, error)."},
		[]string{"method", "outcome"})
	if err != nil {
		return nil, err
	}
	for _, m := range append(submissionMethods, methodOther) {
		for _, o := range []string{OutcomeAccepted, OutcomeInvalid, OutcomeDuplicate, OutcomeRefused, OutcomeError} {
			v.WithLabelValues(m, o)
		}
	}
	return &Submissions{total: v}, nil
}

// Count records a call of method answered with err (nil: accepted).
func (s *Submissions) Count(method string, err error) { s.count(method, Outcome(err)) }

// Duplicate records a call of method acknowledged as a repeat.
func (s *Submissions) Duplicate(method string) { s.count(method, OutcomeDuplicate) }

func (s *Submissions) count(method, outcome string) {
	if s == nil {
		return
	}
	known := methodOther
	for _, m := range submissionMethods {
		if m == method {
			known = m
		}
	}
	s.total.WithLabelValues(known, outcome).Inc()
}

// Outcome classifies the answer to a submission: nil is accepted; a
// JSON-RPC error with 401, 403 or 429 is refused, one with 503 or an
// internal error is error, any other JSON-RPC error is invalid; an error
// that is not a JSON-RPC one (answered as internal) is error.
func Outcome(err error) string {
	if err == nil {
		return OutcomeAccepted
	}
	var e *jsonrpc.Error
	if !errors.As(err, &e) {
		return OutcomeError
	}
	switch {
	case e.HTTPStatus == http.StatusUnauthorized, e.HTTPStatus == http.StatusForbidden, e.HTTPStatus == http.StatusTooManyRequests:
		return OutcomeRefused
	case e.HTTPStatus >= 500, e.Code == jsonrpc.CodeInternal:
		return OutcomeError
	}
	return OutcomeInvalid
}
