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
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
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
	HTTP *http.Client // nil: http.DefaultClient; the forwarder sets NewHTTPClient
}

// NewHTTPClient returns the HTTP client of the forwarder: it keeps up to
// conns idle connections per builder, so the parallel sends reuse them
// instead of opening a connection per call (http.DefaultClient keeps two).
func NewHTTPClient(conns int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = max(conns, 2)
	t.MaxIdleConns = 0 // no global cap: the per-host one bounds it
	return &http.Client{Transport: t, Timeout: 10 * time.Second}
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

// SendBundles sends bs in one JSON-RPC batch request (an array of
// eth_sendBundle calls) and returns one error per bundle, nil where the
// builder accepted it. A builder that answers the batch with anything but
// an array of responses fails every bundle of it.
func (c Client) SendBundles(ctx context.Context, bs []Bundle) []error {
	errs := make([]error, len(bs))
	if len(bs) == 1 {
		_, errs[0] = c.SendBundle(ctx, bs[0])
		return errs
	}
	reqs := make([]rpcRequest, len(bs))
	for i, b := range bs {
		reqs[i] = rpcRequest{JSONRPC: "2.0", ID: i, Method: "eth_sendBundle", Params: []any{b}}
	}
	raw, status, err := c.post(ctx, reqs)
	if err != nil {
		for i := range errs {
			errs[i] = fmt.Errorf("eth_sendBundle batch: %w", err)
		}
		return errs
	}
	return batchErrors(c.URL, status, raw, len(bs))
}

// batchErrors reads a builder's answer to a batch of n eth_sendBundle
// calls: one error per call, nil where the builder accepted it. An answer
// that is not an array of responses fails every call; a call the array
// does not answer fails.
func batchErrors(url string, status int, raw []byte, n int) []error {
	errs := make([]error, n)
	var resps []rpcResponse
	if err := json.Unmarshal(raw, &resps); err != nil {
		err = fmt.Errorf("eth_sendBundle batch to %s: HTTP %d, not a JSON-RPC batch response: %w", url, status, err)
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	answered := make([]bool, n)
	for _, r := range resps {
		i, ok := batchIndex(r.ID, n)
		if !ok || answered[i] {
			continue
		}
		answered[i] = true
		if r.Error != nil {
			errs[i] = &rejection{fmt.Sprintf("eth_sendBundle to %s: %d %s", url, r.Error.Code, r.Error.Message)}
		}
	}
	for i, ok := range answered {
		if !ok {
			errs[i] = fmt.Errorf("eth_sendBundle to %s: no response for this bundle in the batch", url)
		}
	}
	return errs
}

// batchIndex reads the id of a batch response: the index of the request.
func batchIndex(id json.RawMessage, n int) (int, bool) {
	i, err := strconv.Atoi(string(id))
	return i, err == nil && i >= 0 && i < n
}

// CancelBundle cancels a replacement group at the builder.
func (c Client) CancelBundle(ctx context.Context, uuid string) error {
	return c.call(ctx, "eth_cancelBundle", map[string]string{"replacementUuid": uuid}, nil)
}

type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int    `json:"id"`
	Method  string `json:"method"`
	Params  []any  `json:"params"`
}

type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c Client) call(ctx context.Context, method string, param, result any) error {
	raw, status, err := c.post(ctx, rpcRequest{JSONRPC: "2.0", ID: 1, Method: method, Params: []any{param}})
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	var rr rpcResponse
	if err := json.Unmarshal(raw, &rr); err != nil {
		return fmt.Errorf("%s to %s: HTTP %d, not JSON-RPC: %w", method, c.URL, status, err)
	}
	if rr.Error != nil {
		return &rejection{fmt.Sprintf("%s to %s: %d %s", method, c.URL, rr.Error.Code, rr.Error.Message)}
	}
	if result != nil && len(rr.Result) > 0 && string(rr.Result) != "null" {
		return json.Unmarshal(rr.Result, result)
	}
	return nil
}

// maxResponse bounds what is read of a builder's answer.
const maxResponse = 4 << 20

// post sends body as JSON and returns the response body and status.
func (c Client) post(ctx context.Context, body any) ([]byte, int, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(b))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("to %s: %w", c.URL, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, resp.StatusCode, fmt.Errorf("to %s: read response: %w", c.URL, err)
	}
	if len(raw) > maxResponse {
		return nil, resp.StatusCode, errors.New("to " + c.URL + ": response larger than 4 MiB")
	}
	return raw, resp.StatusCode, nil
}
