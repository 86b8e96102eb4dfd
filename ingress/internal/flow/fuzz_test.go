package flow

import (
	"encoding/json"
	"strings"
	"testing"

	of "blockspace.exchange/platform/orderflow"
)

// FuzzTxParam: any parameter of the single-transaction methods gives a
// transaction string or a -32602, never a panic.
func FuzzTxParam(f *testing.F) {
	f.Add(MethodSendRawTransaction, []byte(`"0x02f8"`))
	f.Add(MethodSendPrivateTransaction, []byte(`{"tx":"0x02f8","maxBlockNumber":"0x10","preferences":{}}`))
	f.Add(MethodSendPrivateTransaction, []byte(`{"tx":"0x02","extra":1}`))
	f.Add(MethodSendPrivateRawTransaction, []byte(`["0x"]`))
	f.Fuzz(func(t *testing.T, method string, param []byte) {
		raw, err := TxParam(method, json.RawMessage(param))
		if err != nil {
			if !strings.Contains(err.Error(), "-32602") {
				t.Fatalf("error %v is not invalid params", err)
			}
			return
		}
		if method == MethodSendPrivateTransaction && raw == "" {
			t.Fatal("accepted an empty tx")
		}
	})
}

// FuzzPathKey: the key is never empty nor holds a slash when accepted.
func FuzzPathKey(f *testing.F) {
	for _, s := range []string{"/v1", "/v1/", "/v1/ofk_00", "/v1/a/b", "/v2/x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		key, ok := PathKey(path)
		if ok && strings.Contains(key, "/") {
			t.Fatalf("key %q from %q", key, path)
		}
		if ok && key == "" && strings.TrimSuffix(path, "/") != "/v1" {
			t.Fatalf("open endpoint from %q", path)
		}
	})
}

// FuzzVerifyBody: the verify body decodes strictly, and an accepted one
// has a lower-case address and a signature.
func FuzzVerifyBody(f *testing.F) {
	f.Add([]byte(`{"address":"0x00000000000000000000000000000000000000Aa","nonce":"0x000102030405060708090a0b0c0d0e0f","signature":"0x0102"}`))
	f.Add([]byte(`{"address":"0x00000000000000000000000000000000000000Aa","nonce":"0x01\u0000","signature":"0x0102"}`))
	f.Add([]byte(`{"address":"0x00","nonce":"","signature":"zz","extra":1}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var req VerifyRequest
		if of.StrictJSON(body, &req) != nil {
			return
		}
		addr, sig, ok := req.parse()
		if !ok {
			return
		}
		if addr != strings.ToLower(addr) || len(addr) != 42 || sig == nil || len(req.Nonce) != 34 {
			t.Fatalf("accepted %+v as %q %x", req, addr, sig)
		}
	})
}
