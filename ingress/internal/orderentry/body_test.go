package orderentry

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"blockspace.exchange/platform/httpx"
)

func TestDecodePlace(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []placeItem
		err        string
	}{
		{"one object", `{"accountId": 7, "instrumentId": "ETH-WB-5", "side": true, "orderType": 2, "quantity": "1", "price": "0.5", "clientOrderId": "c", "passive": true}`,
			[]placeItem{{7, "ETH-WB-5", true, 2, "1", "0.5", "c", true}}, ""},
		{"array, numbers as amounts, nulls", `[{"accountId": "7", "instrumentId": "ETH-PC-5", "side": false, "orderType": 1, "quantity": 21000, "price": null, "clientOrderId": null},
			{"accountId": 8, "instrumentId": "ETH-PC-5", "side": true, "orderType": 2, "quantity": "21000", "price": 0.000000001, "extra": 1}]`,
			[]placeItem{{7, "ETH-PC-5", false, 1, "21000", "", "", false}, {8, "ETH-PC-5", true, 2, "21000", "0.000000001", "", false}}, ""},
		{"empty body", ``, nil, "empty"},
		{"null", `null`, nil, "JSON object"},
		{"string", `"x"`, nil, "JSON object"},
		{"empty array", `[]`, nil, "1 to 3 orders, got 0"},
		{"too many", `[{},{},{},{}]`, nil, "1 to 3 orders, got 4"},
		{"array of strings", `["x"]`, nil, "order 0 must be a JSON object"},
		{"trailing data", `{"accountId": 1} {}`, nil, "after the JSON document"},
		{"missing accountId", `{"instrumentId": "ETH-WB-5", "side": true, "orderType": 2, "quantity": "1"}`, nil, "accountId is required"},
		{"zero accountId", `{"accountId": 0}`, nil, "accountId must be a positive integer"},
		{"fractional accountId", `{"accountId": 1.5}`, nil, "accountId must be an integer"},
		{"missing instrument", `{"accountId": 1, "side": true}`, nil, "instrumentId is required"},
		{"instrument a number", `{"accountId": 1, "instrumentId": 5}`, nil, "instrumentId must be a string"},
		{"missing side", `{"accountId": 1, "instrumentId": "ETH-WB-5", "orderType": 2, "quantity": "1"}`, nil, "side is required"},
		{"side a string", `{"accountId": 1, "instrumentId": "ETH-WB-5", "side": "true"}`, nil, "side must be true or false"},
		{"missing type", `{"accountId": 1, "instrumentId": "ETH-WB-5", "side": true, "quantity": "1"}`, nil, "orderType is required"},
		{"huge type", `{"accountId": 1, "instrumentId": "ETH-WB-5", "side": true, "orderType": 9999999999, "quantity": "1"}`, nil, "orderType 9999999999"},
		{"missing quantity", `[{"accountId": 1, "instrumentId": "ETH-WB-5", "side": true, "orderType": 2}]`, nil, "order 0: quantity is required"},
		{"quantity an object", `{"accountId": 1, "instrumentId": "ETH-WB-5", "side": true, "orderType": 2, "quantity": {}}`, nil, "quantity must be a decimal string"},
		{"passive a number", `{"accountId": 1, "instrumentId": "ETH-WB-5", "side": true, "orderType": 2, "quantity": "1", "passive": 1}`, nil, "passive must be true or false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodePlace([]byte(tc.body), 3)
			if tc.err != "" {
				var e *httpx.Error
				if !errors.As(err, &e) || e.Status != http.StatusBadRequest || !strings.Contains(e.Message, tc.err) {
					t.Fatalf("error %v, want a 400 saying %q", err, tc.err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("got %+v, %v", got, err)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("order %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestDecodeCancels(t *testing.T) {
	c, err := decodeCancel([]byte(`{"accountId": 3, "instrumentId": "ETH-WB-5", "orderId": 12, "clientOrderId": "x"}`))
	if err != nil || c != (cancelOne{3, "ETH-WB-5", 12, ""}) {
		t.Fatalf("by id: %+v %v", c, err)
	}
	c, err = decodeCancel([]byte(`{"accountId": 3, "instrumentId": "ETH-WB-5", "orderId": null, "clientOrderId": "x"}`))
	if err != nil || c != (cancelOne{3, "ETH-WB-5", 0, "x"}) {
		t.Fatalf("by client id: %+v %v", c, err)
	}
	for body, msg := range map[string]string{
		`{"accountId": 3, "instrumentId": "ETH-WB-5"}`:                   "orderId or clientOrderId is required",
		`{"accountId": 3, "instrumentId": "ETH-WB-5", "orderId": -1}`:    "orderId must be a positive integer",
		`{"accountId": 3, "orderId": 1}`:                                 "instrumentId is required",
		`{"accountId": 3, "instrumentId": "ETH-WB-5", "orderId": "one"}`: "orderId must be an integer",
	} {
		if _, err := decodeCancel([]byte(body)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", body, err, msg)
		}
	}
	b, err := decodeCancelBatch([]byte(`{"accountId": 3, "instrumentId": "ETH-PC-5", "orderIds": [1, "2"], "clientOrderIds": ["a"]}`), 3)
	if err != nil || len(b.OrderIDs) != 2 || b.OrderIDs[1] != 2 || b.ClientOrderIDs[0] != "a" {
		t.Fatalf("batch: %+v %v", b, err)
	}
	for body, msg := range map[string]string{
		`{"accountId": 3, "instrumentId": "ETH-PC-5"}`:                                     "1 to 3 orders together, got 0",
		`{"accountId": 3, "instrumentId": "ETH-PC-5", "orderIds": [1, 2, 3, 4]}`:           "got 4",
		`{"accountId": 3, "instrumentId": "ETH-PC-5", "orderIds": [0]}`:                    "orderIds[0] must be a positive integer",
		`{"accountId": 3, "instrumentId": "ETH-PC-5", "orderIds": "1"}`:                    "orderIds must be an array of integers",
		`{"accountId": 3, "instrumentId": "ETH-PC-5", "clientOrderIds": [""]}`:             "clientOrderIds[0] is empty",
		`{"accountId": 3, "instrumentId": "ETH-PC-5", "clientOrderIds": [1]}`:              "clientOrderIds must be an array of strings",
		`{"accountId": 3, "instrumentId": "ETH-PC-5", "orderIds": [1.5]}`:                  "orderIds[0] must be a positive integer",
		`{"accountId": 3, "instrumentId": "ETH-PC-5", "orderIds": [99999999999999999999]}`: "orderIds[0] must be a positive integer",
	} {
		if _, err := decodeCancelBatch([]byte(body), 3); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", body, err, msg)
		}
	}
	for body, want := range map[string]string{
		`{"accountId": 3}`:                             "",
		`{"accountId": 3, "instrumentId": null}`:       "",
		`{"accountId": 3, "instrumentId": " \t"}`:      "",
		`{"accountId": 3, "instrumentId": "ETH-WB-5"}`: "ETH-WB-5",
	} {
		a, err := decodeCancelAll([]byte(body))
		if err != nil || a.AccountID != 3 || a.InstrumentID != want {
			t.Errorf("%s: %+v %v", body, a, err)
		}
	}
	if _, err := decodeCancelAll([]byte(`{"instrumentId": "ETH-WB-5"}`)); err == nil {
		t.Error("cancel-all without accountId accepted")
	}
}

// FuzzDecodePlace holds the place decoder to its contract on any input:
// no panic; either a 400 naming the problem or 1 to max orders with a
// positive account, an instrument and a quantity.
func FuzzDecodePlace(f *testing.F) {
	f.Add([]byte(`{"accountId": 7, "instrumentId": "ETH-WB-5", "side": true, "orderType": 2, "quantity": "1", "price": "0.5"}`))
	f.Add([]byte(`[{"accountId": "7", "instrumentId": "ETH-PC-5", "side": false, "orderType": 1, "quantity": 21000, "price": null}]`))
	f.Add([]byte(`[{}, {"accountId": -1}]`))
	f.Add([]byte(`{"accountId": 1e3, "side": tru`))
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := decodePlace(body, 5)
		if err != nil {
			var e *httpx.Error
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Message == "" {
				t.Fatalf("error %v is not a 400 with a message", err)
			}
			return
		}
		if len(items) == 0 || len(items) > 5 {
			t.Fatalf("%d orders decoded", len(items))
		}
		for _, it := range items {
			if it.AccountID <= 0 || it.InstrumentID == "" || it.Quantity == "" {
				t.Fatalf("decoded %+v", it)
			}
		}
		if !json.Valid(body) {
			t.Fatalf("invalid JSON decoded: %q", body)
		}
	})
}

// FuzzDecodeCancel does the same for the three cancel bodies.
func FuzzDecodeCancel(f *testing.F) {
	f.Add([]byte(`{"accountId": 3, "instrumentId": "ETH-WB-5", "orderId": 12}`))
	f.Add([]byte(`{"accountId": 3, "instrumentId": "ETH-PC-5", "orderIds": [1, "2"], "clientOrderIds": ["a"]}`))
	f.Add([]byte(`{"accountId": 3, "instrumentId": null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		check := func(err error) bool {
			if err == nil {
				return true
			}
			var e *httpx.Error
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Message == "" {
				t.Fatalf("error %v is not a 400 with a message", err)
			}
			return false
		}
		if c, err := decodeCancel(body); check(err) {
			if c.AccountID <= 0 || c.InstrumentID == "" || (c.OrderID <= 0 && c.ClientOrderID == "") {
				t.Fatalf("cancel %+v", c)
			}
		}
		if b, err := decodeCancelBatch(body, 4); check(err) {
			n := len(b.OrderIDs) + len(b.ClientOrderIDs)
			if b.AccountID <= 0 || b.InstrumentID == "" || n == 0 || n > 4 {
				t.Fatalf("batch %+v", b)
			}
			for _, id := range b.OrderIDs {
				if id <= 0 {
					t.Fatalf("batch %+v", b)
				}
			}
		}
		if a, err := decodeCancelAll(body); check(err) {
			if a.AccountID <= 0 || strings.TrimSpace(a.InstrumentID) != a.InstrumentID {
				t.Fatalf("cancel-all %+v", a)
			}
		}
	})
}
