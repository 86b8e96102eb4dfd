// Package builders takes orderflow from the log to block builders: it
// records every transaction and bundle in Postgres (the tracking read
// model), resolves a backrun's leading originator hash to the signed
// transaction, applies replacement and cancellation, and sends bundles
// with their refund terms to every configured builder (eth_sendBundle).
package builders

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Bundle is the eth_sendBundle parameter sent to builders.
type Bundle struct {
	Txs               []string `json:"txs"`
	BlockNumber       string   `json:"blockNumber,omitempty"`
	MinTimestamp      int64    `json:"minTimestamp,omitempty"`
	MaxTimestamp      int64    `json:"maxTimestamp,omitempty"`
	RevertingTxHashes []string `json:"revertingTxHashes,omitempty"`
	ReplacementUUID   string   `json:"replacementUuid,omitempty"`
	RefundPercent     int      `json:"refundPercent,omitempty"`
	RefundRecipient   string   `json:"refundRecipient,omitempty"`
}

// Client calls one builder's JSON-RPC endpoint.
type Client struct {
	URL  string
	HTTP *http.Client
}

// SendBundle sends b and returns the builder's bundle hash.
func (c Client) SendBundle(ctx context.Context, b Bundle) (string, error) {
	var out struct {
		BundleHash string `json:"bundleHash"`
	}
	if err := c.call(ctx, "eth_sendBundle", b, &out); err != nil {
		return "", err
	}
	return out.BundleHash, nil
}

// CancelBundle cancels a replacement group at the builder.
func (c Client) CancelBundle(ctx context.Context, uuid string) error {
	return c.call(ctx, "eth_cancelBundle", map[string]string{"replacementUuid": uuid}, nil)
}

func (c Client) call(ctx context.Context, method string, param, result any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": []any{param}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s to %s: %w", method, c.URL, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var rr struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &rr); err != nil {
		return fmt.Errorf("%s to %s: HTTP %d, not JSON-RPC: %w", method, c.URL, resp.StatusCode, err)
	}
	if rr.Error != nil {
		return fmt.Errorf("%s to %s: %d %s", method, c.URL, rr.Error.Code, rr.Error.Message)
	}
	if result != nil && len(rr.Result) > 0 && string(rr.Result) != "null" {
		return json.Unmarshal(rr.Result, result)
	}
	return nil
}
