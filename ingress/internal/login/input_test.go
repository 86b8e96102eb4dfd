package login

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"

	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/topics"
)

func TestParseVerify(t *testing.T) {
	sig := "0x" + strings.Repeat("ab", 65)
	addr := "0x" + strings.Repeat("Ab", 20)
	for _, tc := range []struct {
		name string
		v    url.Values
		ua   string
		ok   bool
	}{
		{"good", url.Values{"addr": {addr}, "nonceHash": {"0x0A0b0c0d"}, "signature": {sig}}, "ua", true},
		{"bare hex", url.Values{"addr": {addr}, "nonceHash": {"0a0b0c0d"}, "signature": {sig[2:]}}, "ua", true},
		{"short address", url.Values{"addr": {"0x12"}, "nonceHash": {"0x0a0b0c0d"}, "signature": {sig}}, "ua", false},
		{"long nonce", url.Values{"addr": {addr}, "nonceHash": {"0x0a0b0c0d0e"}, "signature": {sig}}, "ua", false},
		{"bad hex", url.Values{"addr": {addr}, "nonceHash": {"0x0a0b0c0d"}, "signature": {"0x" + strings.Repeat("zz", 65)}}, "ua", false},
		{"no user agent", url.Values{"addr": {addr}, "nonceHash": {"0x0a0b0c0d"}, "signature": {sig}}, " ", false},
	} {
		in, err := ParseVerify(tc.v, tc.ua)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
		if tc.ok && (in.Address != strings.ToLower(addr) || in.Nonce != "0x0a0b0c0d" || len(in.Signature) != 65) {
			t.Errorf("%s: %+v", tc.name, in)
		}
	}
}

func TestParseCollateralPerSlot(t *testing.T) {
	for in, want := range map[string]int{
		"0": 0, "100": 0, "100.000": 0, "12.5": 0, "-0": 0, "0.0001": 0,
		"-0.1": CodeCollateralNegative, "-5": CodeCollateralNegative,
		"100.0001": CodeCollateralTooLarge, "101": CodeCollateralTooLarge, "1000000": CodeCollateralTooLarge, "0100.5": CodeCollateralTooLarge,
		"": 1001, "abc": 1001, "1e2": 1001, "1.": 1001, ".5": 1001, "--1": 1001,
	} {
		_, err := ParseCollateralPerSlot(in)
		got := 0
		if err != nil {
			got = classifyCode(err)
		}
		if got != want {
			t.Errorf("%q: code %d, want %d (%v)", in, got, want, err)
		}
	}
}

func TestParsePayoutAddress(t *testing.T) {
	key, _ := crypto.GenerateKey()
	sum := crypto.PubkeyToAddress(key.PublicKey).Hex()
	if got, err := ParsePayoutAddress(sum); err != nil || got != sum {
		t.Errorf("checksummed: %q %v", got, err)
	}
	if got, err := ParsePayoutAddress(strings.ToLower(sum)); err != nil || got != sum {
		t.Errorf("lower-case: %q %v", got, err)
	}
	flipped := []byte(sum)
	for i := 2; i < len(flipped); i++ {
		if c := flipped[i]; c >= 'a' && c <= 'f' {
			flipped[i] = c - 32
			break
		} else if c >= 'A' && c <= 'F' {
			flipped[i] = c + 32
			break
		}
	}
	if _, err := ParsePayoutAddress(string(flipped)); err == nil {
		t.Errorf("bad checksum accepted: %s", flipped)
	}
}

func TestTypedDataSignatureRecovers(t *testing.T) {
	key, _ := crypto.GenerateKey()
	doc := newTypedData("X", 1337, "0x01020304", "example.org")
	parsed, err := parseTypedData(jsonString(doc))
	if err != nil {
		t.Fatal(err)
	}
	digest, err := parsed.hash()
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := crypto.Sign(digest, key)
	want := crypto.PubkeyToAddress(key.PublicKey)
	for _, v := range []byte{0, 27} {
		s := append([]byte(nil), sig...)
		s[64] += v
		if got, err := recoverSigner(digest, s); err != nil || got != want {
			t.Errorf("v+%d: %s %v", v, got.Hex(), err)
		}
	}
	s := append([]byte(nil), sig...)
	s[64] = 5
	if _, err := recoverSigner(digest, s); err == nil {
		t.Error("v=5 accepted")
	}
}

func FuzzParams(f *testing.F) {
	f.Add("addr=0x1&name=x", "application/x-www-form-urlencoded", []byte("addr=0x"+strings.Repeat("a", 40)))
	f.Add("", "application/json", []byte(`{"refreshToken":"rt1.abc","x":null}`))
	f.Add("%zz", "text/plain", []byte("x"))
	f.Add("", "application/json", []byte(`{"addr":1}`))
	f.Fuzz(func(t *testing.T, query, contentType string, body []byte) {
		v, err := Params(query, contentType, body)
		var he *httpx.Error
		if err != nil && (!errors.As(err, &he) || (he.Status != 400 && he.Status != 415) || he.Message == "") {
			t.Fatalf("error %v is not a 400 or 415 that says what is wrong", err)
		}
		if err != nil {
			return
		}
		_, _ = ParseLogin(v)
		_, _ = ParseVerify(v, "ua")
		_, _, _ = ParseRefresh(v, "", "ua")
	})
}

func FuzzParseVerify(f *testing.F) {
	f.Add("0x"+strings.Repeat("ab", 20), "0x01020304", "0x"+strings.Repeat("cd", 65), "ua")
	f.Add("0X", "0x", "", "")
	f.Fuzz(func(t *testing.T, addr, nonce, sig, ua string) {
		in, err := ParseVerify(url.Values{"addr": {addr}, "nonceHash": {nonce}, "signature": {sig}}, ua)
		if err != nil {
			return
		}
		if len(in.Address) != 42 || len(in.Nonce) != 10 || len(in.Signature) != 65 || in.UserAgent == "" {
			t.Fatalf("accepted malformed input: %+v", in)
		}
	})
}

func FuzzParseRefresh(f *testing.F) {
	tok, _, _ := newRefreshToken()
	f.Add(tok, "", "ua")
	f.Add("", tok, "ua")
	f.Add("rt1.", "x", "")
	f.Fuzz(func(t *testing.T, param, cookie, ua string) {
		got, _, err := ParseRefresh(url.Values{"refreshToken": {param}}, cookie, ua)
		if err != nil {
			return
		}
		if _, err := decodeRefreshToken(got); err != nil {
			t.Fatalf("accepted a malformed credential %q", got)
		}
	})
}

// TestParamsBodyKinds: a form or JSON body is read, any other declared
// kind of body is 415, and a malformed body of a known kind is 400. JSON
// numbers are taken as written, so that ids and amounts may be sent with
// the JSON types of the interface.
func TestParamsBodyKinds(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body string
		status                  int
		addr                    string
	}{
		{"form", "application/x-www-form-urlencoded", "addr=0xab", 0, "0xab"},
		{"json", "application/json; charset=utf-8", `{"addr": "0xab"}`, 0, "0xab"},
		{"empty body of any kind", "text/plain", "", 0, "0xq"},
		{"text", "text/plain", "addr=0xab", 415, ""},
		{"no content type", "", "addr=0xab", 415, ""},
		{"malformed json", "application/json", `{"addr": }`, 400, ""},
		{"json number", "application/json", `{"addr": 5}`, 0, "5"},
		{"json number as written", "application/json", `{"addr": 1.50e-3}`, 0, "1.50e-3"},
		{"json null", "application/json", `{"addr": null}`, 0, "0xq"},
		{"json boolean", "application/json", `{"addr": true}`, 400, ""},
		{"json object", "application/json", `{"addr": {"a": 1}}`, 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Params("addr=0xq", tc.contentType, []byte(tc.body))
			var he *httpx.Error
			switch {
			case tc.status == 0 && (err != nil || v.Get("addr") != tc.addr):
				t.Fatalf("params %v, error %v", v, err)
			case tc.status != 0 && (!errors.As(err, &he) || he.Status != tc.status || he.Code != topics.CodeValidation):
				t.Fatalf("error %v, want status %d", err, tc.status)
			}
		})
	}
}
