package api

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/shopspring/decimal"
)

// TestOrderRowAsJSON: a stored order is shown with its amounts as exact
// decimal strings, null price and average before they exist, and the
// client order id only to its owner.
func TestOrderRowAsJSON(t *testing.T) {
	code := 191
	label := "c-1"
	r := OrderRow{OrderID: 7, MarketID: 1_000_000_000_042, InstrumentID: "ETH-PC-42", Side: true, OrderType: 2,
		Quantity: decimal.RequireFromString("21000"), Fulfilled: decimal.RequireFromString("1000.0"),
		Price: decimal.NewNullDecimal(decimal.RequireFromString("0.000000002")), Fees: decimal.Zero,
		Status: 12, ErrorCode: &code, ClientOrderID: &label, Passive: true, Source: 1,
		Created: time.UnixMilli(1_750_000_000_001), Updated: time.UnixMilli(1_750_000_000_002), AccountID: 9}
	pub, err := json.Marshal(r.Order())
	if err != nil {
		t.Fatal(err)
	}
	wantPub := `{"orderId":7,"marketId":1000000000042,"instrumentId":"ETH-PC-42","side":true,"orderType":2,` +
		`"quantity":"21000","fulfilled":"1000","price":"0.000000002","fees":"0","status":12,"errorCode":191,` +
		`"clientOrderId":null,"passive":true,"createDate":1750000000001,"source":1,"updateDate":1750000000002}`
	if string(pub) != wantPub {
		t.Fatalf("public order\n got %s\nwant %s", pub, wantPub)
	}
	own, err := json.Marshal(r.Own())
	if err != nil {
		t.Fatal(err)
	}
	wantOwn := `{"orderId":7,"marketId":1000000000042,"instrumentId":"ETH-PC-42","side":true,"orderType":2,` +
		`"quantity":"21000","fulfilled":"1000","price":"0.000000002","fees":"0","status":12,"errorCode":191,` +
		`"clientOrderId":"c-1","passive":true,"createDate":1750000000001,"source":1,"updateDate":1750000000002,` +
		`"accountId":9,"averageTradePrice":null}`
	if string(own) != wantOwn {
		t.Fatalf("own order\n got %s\nwant %s", own, wantOwn)
	}
}

// TestOrderMatchesTheDocument holds the order resource's JSON members
// equal to the schemas of openapi.yaml: Order is WholeBlockOrder, OwnOrder
// adds OwnOrder's members, and with a message it is the placed order.
func TestOrderMatchesTheDocument(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `yaml:"properties"`
				AllOf      []struct {
					Properties map[string]any `yaml:"properties"`
				} `yaml:"allOf"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc.Components.Schemas
	var props func(name string) []string
	props = func(name string) []string {
		s := schemas[name]
		var out []string
		for k := range s.Properties {
			out = append(out, k)
		}
		for _, part := range s.AllOf {
			for k := range part.Properties {
				out = append(out, k)
			}
		}
		if name == "OwnOrder" {
			out = append(out, props("WholeBlockOrder")...)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		schema string
		value  any
	}{
		{"WholeBlockOrder", OrderRow{}.Order()},
		{"OwnOrder", OrderRow{}.Own()},
		{"InclusionPreconfPlacedOrder", OwnOrder{Message: "refused"}},
	} {
		if got, want := jsonKeys(t, tc.value), props(tc.schema); !slices.Equal(got, want) {
			t.Errorf("%s: members %v, document %v", tc.schema, got, want)
		}
	}
}

func jsonKeys(t *testing.T, v any) []string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
