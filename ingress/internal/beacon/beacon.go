// Package beacon reads proposer duties and validators from a beacon node
// over the standard beacon API (Client), or from the dev stack's stand-in
// that assigns slots to the validators registered with the exchange (Dev).
package beacon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Duty is one proposer duty: the validator that proposes slot.
type Duty struct {
	Pubkey         string // lower-case 0x hex, 48 bytes
	ValidatorIndex uint64
	Slot           uint64
}

// Validator is what the beacon chain knows of a validator.
type Validator struct {
	Index  uint64
	Status string // e.g. active_ongoing
}

// ErrUnavailable wraps failures to reach the beacon node or to read its
// answer; callers retry.
var ErrUnavailable = errors.New("beacon node unavailable")

// Client speaks the standard beacon API of a beacon node.
type Client struct {
	base *url.URL
	http *http.Client
}

// NewClient returns a client of the beacon node at baseURL (for example
// http://127.0.0.1:5052). timeout bounds each request (default 5s).
func NewClient(baseURL string, timeout time.Duration) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("beacon url %q: want http(s)://host[:port]", baseURL)
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &Client{base: u, http: &http.Client{Timeout: timeout}}, nil
}

// ProposerDuties returns the proposers of epoch's slots
// (GET /eth/v1/validator/duties/proposer/{epoch}). Beacon nodes answer for
// the current and the next epoch.
func (c *Client) ProposerDuties(ctx context.Context, epoch uint64) ([]Duty, error) {
	var body struct {
		Data []struct {
			Pubkey         string `json:"pubkey"`
			ValidatorIndex string `json:"validator_index"`
			Slot           string `json:"slot"`
		} `json:"data"`
	}
	path := "/eth/v1/validator/duties/proposer/" + strconv.FormatUint(epoch, 10)
	if found, err := c.get(ctx, path, &body); err != nil {
		return nil, err
	} else if !found {
		return nil, fmt.Errorf("proposer duties of epoch %d: %w: not found", epoch, ErrUnavailable)
	}
	out := make([]Duty, 0, len(body.Data))
	for _, d := range body.Data {
		idx, err1 := strconv.ParseUint(d.ValidatorIndex, 10, 64)
		slot, err2 := strconv.ParseUint(d.Slot, 10, 64)
		pk, err3 := NormalizePubkey(d.Pubkey)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("proposer duties of epoch %d: bad duty %+v", epoch, d)
		}
		out = append(out, Duty{Pubkey: pk, ValidatorIndex: idx, Slot: slot})
	}
	return out, nil
}

// Validator returns the validator with pubkey at the head state
// (GET /eth/v1/beacon/states/head/validators/{pubkey}); ok is false when
// the chain does not know it.
func (c *Client) Validator(ctx context.Context, pubkey string) (Validator, bool, error) {
	var body struct {
		Data struct {
			Index  string `json:"index"`
			Status string `json:"status"`
		} `json:"data"`
	}
	found, err := c.get(ctx, "/eth/v1/beacon/states/head/validators/"+url.PathEscape(pubkey), &body)
	if err != nil || !found {
		return Validator{}, false, err
	}
	idx, err := strconv.ParseUint(body.Data.Index, 10, 64)
	if err != nil {
		return Validator{}, false, fmt.Errorf("validator %s: bad index %q", pubkey, body.Data.Index)
	}
	return Validator{Index: idx, Status: body.Data.Status}, true, nil
}

// get decodes the JSON answer of path into v; found is false on 404.
func (c *Client) get(ctx context.Context, path string, v any) (found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base.String()+path, nil)
	if err != nil {
		return false, fmt.Errorf("beacon %s: %w", path, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return false, fmt.Errorf("beacon %s: %w: %v", path, ErrUnavailable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return false, fmt.Errorf("beacon %s: %w: %v", path, ErrUnavailable, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return false, nil
	case resp.StatusCode != http.StatusOK:
		return false, fmt.Errorf("beacon %s: %w: HTTP %d: %s", path, ErrUnavailable, resp.StatusCode, trim(body))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return false, fmt.Errorf("beacon %s: decode answer: %w", path, err)
	}
	return true, nil
}

func trim(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return strings.TrimSpace(string(b))
}

// NormalizePubkey returns a BLS public key as lower-case 0x hex of 48
// bytes, or an error naming what is wrong.
func NormalizePubkey(s string) (string, error) {
	h := strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"))
	if len(h) != 96 || strings.Trim(h, "0123456789abcdef") != "" || !strings.HasPrefix(strings.ToLower(s), "0x") {
		return "", fmt.Errorf("pubkey %q is not 0x-prefixed hex of 48 bytes", short(s))
	}
	return "0x" + h, nil
}

func short(s string) string {
	if len(s) > 110 {
		return s[:110] + "…"
	}
	return s
}
