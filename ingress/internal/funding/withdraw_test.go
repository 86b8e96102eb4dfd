package funding

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/topics"
)

// FuzzWithdrawBody feeds outside bytes to the withdraw body's decoding
// and checks, as the handler runs them before it reads the database. They
// never panic; a body they accept is 1 to 20 items with positive ids and
// a positive quantity each; anything else is a 400 with code 1001 whose
// message says what is wrong.
func FuzzWithdrawBody(f *testing.F) {
	for _, s := range []string{
		`[{"accountId": 11, "chainId": 1337, "tokenId": 1, "quantity": "0.25"}]`,
		`[{"accountId": 11, "chainId": 1, "tokenId": 1, "quantity": 1.5}, {"accountId": 11, "chainId": 1337, "tokenId": 1, "quantity": "2"}]`,
		`[]`, `{}`, `[{}]`, `null`, `[null]`, `[{"accountId": -1, "chainId": 1337, "tokenId": 1, "quantity": "1"}]`,
		`[{"accountId": 1e3, "chainId": 1337, "tokenId": 1, "quantity": "1"}]`,
		`[{"accountId": 9223372036854775808, "chainId": 1337, "tokenId": 1, "quantity": "1"}]`,
		`[{"accountId": 11, "chainId": 1337, "tokenId": 1, "quantity": "0"}]`,
		`[{"accountId": 11, "chainId": 1337, "tokenId": 1, "quantity": "-0.1"}]`,
		`[{"accountId": 11, "chainId": 1337, "tokenId": 1, "quantity": "1e400"}]`,
		`[{"accountId": 11, "chainId": 1337, "tokenId": 1, "quantity": "` + strings.Repeat("9", 100) + `"}]`,
		`[{"accountId": "11", "chainId": 1337, "tokenId": 1, "quantity": "1"}]`,
		`[{"accountId": 11, "chainId": 1337, "tokenId": 1, "quantity": "1"}] x`,
		`[{"accountId": true, "chainId": [1], "tokenId": {"a": 1}, "quantity": null}]`,
		`[{"accountId": 11, "chainId": 1337, "tokenId": 1, "quantity": "1,5"}]`,
		`[{"accountId": "11", "chainId": "1337", "tokenId": "1", "quantity": "\u0031"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		raw, err := decodeWithdraw(body)
		if err != nil {
			requireInvalid(t, err)
			return
		}
		items, err := withdrawItems(raw, 20)
		if err != nil {
			requireInvalid(t, err)
			if len(raw) > 0 && len(raw) <= 20 && !strings.HasPrefix(err.Error(), "item ") {
				t.Fatalf("message %q does not name the item", err)
			}
			return
		}
		if len(items) != len(raw) || len(items) == 0 || len(items) > 20 {
			t.Fatalf("%d items from %d", len(items), len(raw))
		}
		for i, w := range items {
			if w.accountID <= 0 || w.chainID <= 0 || w.tokenID <= 0 || !w.quantity.IsPositive() {
				t.Fatalf("item %d accepted as %+v", i, w)
			}
		}
	})
}

// TestWithdrawBodyOfAnotherShape: a body that is not an array, or an
// item that is not an object, is a 400 that says so in the interface's
// words (not in the decoder's Go types).
func TestWithdrawBodyOfAnotherShape(t *testing.T) {
	for _, tc := range []struct{ body, message string }{
		{`{"accountId": 11, "chainId": 1337, "tokenId": 1, "quantity": "1"}`, `body must be a JSON array of withdraw requests, got {"accountId"`},
		{`"x"`, `body must be a JSON array of withdraw requests, got "x"`},
		{`5`, `body must be a JSON array of withdraw requests, got 5`},
		{`[1]`, `item 0 must be a JSON object, got 1`},
		{`[{"accountId": 11}, [1]]`, `item 1 must be a JSON object, got [1]`},
		{`[null]`, `item 0 must be a JSON object, got null`},
		{`{"accountId": `, `malformed JSON`},
	} {
		t.Run(tc.body, func(t *testing.T) {
			_, err := decodeWithdraw([]byte(tc.body))
			requireInvalid(t, err)
			if !strings.HasPrefix(err.Error(), tc.message) {
				t.Fatalf("message %q, want %q", err, tc.message)
			}
		})
	}
}

// requireInvalid checks that err is a 400 with code 1001 and a message.
func requireInvalid(t *testing.T, err error) {
	t.Helper()
	var he *httpx.Error
	if !errors.As(err, &he) || he.Status != http.StatusBadRequest || he.Code != topics.CodeValidation || he.Message == "" {
		t.Fatalf("error %v is not a 400 validation error", err)
	}
}

// TestWithdrawItemsReadIDs: ids are JSON numbers or strings holding
// them, and a chain id may be written in hexadecimal as everywhere on
// the interface (0x539 is the dev chain 1337).
func TestWithdrawItemsReadIDs(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		chainID    int64
	}{
		{"numbers", `[{"accountId": 11, "chainId": 1337, "tokenId": 1, "quantity": "1"}]`, 1337},
		{"strings", `[{"accountId": "11", "chainId": "1337", "tokenId": "1", "quantity": "1"}]`, 1337},
		{"hexadecimal chain id", `[{"accountId": 11, "chainId": "0x539", "tokenId": 1, "quantity": "1"}]`, 1337},
		{"hexadecimal Hoodi", `[{"accountId": 11, "chainId": "0x88BB0", "tokenId": 1, "quantity": "1"}]`, 560048},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := decodeWithdraw([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			items, err := withdrawItems(raw, 20)
			if err != nil || items[0].chainID != tc.chainID || items[0].accountID != 11 || items[0].tokenID != 1 {
				t.Fatalf("items %+v, error %v", items, err)
			}
		})
	}
}
