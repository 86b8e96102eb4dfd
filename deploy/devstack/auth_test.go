package devstack

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"

	"blockspace.exchange/platform/eip712"
	"blockspace.exchange/platform/poll"
)

const testUA = "wallet-test/1.0"

// client is an HTTP client of the stack that keeps no cookies itself;
// tests pass the refresh cookie explicitly.
type client struct {
	t    *testing.T
	base string
}

type answer struct {
	reply
	cookies []*http.Cookie
	raw     []byte
}

func (c client) do(method, path string, form url.Values, header map[string]string) answer {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, c.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("User-Agent", testUA)
	for k, v := range header {
		req.Header.Set(k, v) // an empty User-Agent makes the client send none
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	a := answer{reply: reply{status: resp.StatusCode, header: resp.Header}, cookies: resp.Cookies()}
	a.raw, _ = io.ReadAll(resp.Body)
	_ = json.Unmarshal(a.raw, &a.body)
	return a
}

func (a answer) cookie(name string) *http.Cookie {
	for _, c := range a.cookies {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// wallet logs in as ethers or viem would: ask for the challenge, sign the
// typed data exactly as returned, send the signature.
type wallet struct {
	key  *ecdsa.PrivateKey
	addr string
}

func newWallet(t *testing.T) wallet {
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return wallet{key: key, addr: crypto.PubkeyToAddress(key.PublicKey).Hex()}
}

type challenge struct {
	Status        string `json:"status"`
	EIP712Message string `json:"eip712Message"`
	NonceHash     string `json:"nonceHash"`
}

func (w wallet) challenge(t *testing.T, c client) challenge {
	t.Helper()
	a := c.do("POST", "/api/v1/user/login", url.Values{"addr": {w.addr}, "name": {"Alice"}}, nil)
	if a.status != 200 || !a.body.Success {
		t.Fatalf("login: %d %s", a.status, a.raw)
	}
	var ch challenge
	if err := json.Unmarshal(a.body.Data, &ch); err != nil {
		t.Fatal(err)
	}
	return ch
}

// sign signs the typed data as a wallet does, v as 27/28.
func (w wallet) sign(t *testing.T, doc string) string {
	t.Helper()
	sig, err := eip712.Sign(w.key, doc)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

type session struct {
	User struct {
		UserID   int64  `json:"userId"`
		Address  string `json:"address"`
		Status   int    `json:"status"`
		UserType int    `json:"userType"`
		Class    int    `json:"userClass"`
		Name     string `json:"displayName"`
		Accounts []struct {
			AccountID int64 `json:"accountId"`
			Type      int   `json:"type"`
		} `json:"accounts"`
	} `json:"user"`
	AccessToken struct {
		Data struct {
			Header  map[string]any `json:"header"`
			Payload struct {
				User struct {
					UserID  int64    `json:"userId"`
					Address string   `json:"address"`
					Roles   []string `json:"roles"`
				} `json:"user"`
				AccessType string `json:"access_type"`
				Iat        int64  `json:"iat"`
				Exp        int64  `json:"exp"`
			} `json:"payload"`
		} `json:"data"`
		Token string `json:"token"`
	} `json:"accessToken"`
}

func (w wallet) login(t *testing.T, c client) (session, answer) {
	t.Helper()
	ch := w.challenge(t, c)
	a := c.do("POST", "/api/v1/user/login/verify", url.Values{"addr": {w.addr}, "nonceHash": {ch.NonceHash}, "signature": {w.sign(t, ch.EIP712Message)}}, nil)
	if a.status != 200 || !a.body.Success {
		t.Fatalf("verify: %d %s", a.status, a.raw)
	}
	var s session
	if err := json.Unmarshal(a.body.Data, &s); err != nil {
		t.Fatal(err)
	}
	return s, a
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

func (s *running) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestWalletLoginRefreshProfileAccountsLogout(t *testing.T) {
	t.Parallel()
	s := startStack(t, worldTempDir(t))
	c := client{t: t, base: s.Addresses().REST}
	w := newWallet(t)

	ch := w.challenge(t, c)
	var td apitypes.TypedData
	if err := json.Unmarshal([]byte(ch.EIP712Message), &td); err != nil {
		t.Fatal(err)
	}
	if td.PrimaryType != "data" || td.Domain.Name != "Blockspace Exchange Login" || td.Domain.Version != "1" ||
		(*big.Int)(td.Domain.ChainId).Int64() != 1337 || td.Domain.VerifyingContract != "0x0000000000000000000000000000000000000000" ||
		td.Message["hash"] != ch.NonceHash || len(ch.NonceHash) != 10 {
		t.Fatalf("typed data: %s", ch.EIP712Message)
	}
	verify := c.do("POST", "/api/v1/user/login/verify", url.Values{"addr": {w.addr}, "nonceHash": {ch.NonceHash}, "signature": {w.sign(t, ch.EIP712Message)}}, nil)
	if verify.status != 200 {
		t.Fatalf("verify: %d %s", verify.status, verify.raw)
	}
	var sess session
	if err := json.Unmarshal(verify.body.Data, &sess); err != nil {
		t.Fatal(err)
	}
	u := sess.User
	if u.Address != strings.ToLower(w.addr) || u.Status != 1 || u.UserType != 1 || u.Class != 1 || u.Name != "Alice" ||
		len(u.Accounts) != 2 || u.Accounts[0].Type != 1 || u.Accounts[1].Type != 2 {
		t.Fatalf("user: %s", verify.body.Data)
	}
	tok := sess.AccessToken
	if tok.Data.Header["alg"] != "ES256" || tok.Data.Header["typ"] != "JWT" || tok.Data.Header["kid"] == "" ||
		tok.Data.Payload.AccessType != "access_token" || tok.Data.Payload.Exp-tok.Data.Payload.Iat != 3600 ||
		tok.Data.Payload.User.UserID != u.UserID || tok.Data.Payload.User.Roles[0] != "ROLE_USER" {
		t.Fatalf("access token: %s", verify.body.Data)
	}
	ck := verify.cookie("x_auth_refresh_token")
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/api/v1/user/login" || ck.Secure {
		t.Fatalf("refresh cookie: %+v", ck)
	}

	// The token signed by ingress verifies in query-api.
	info := c.do("GET", "/api/v1/user/info", nil, bearer(tok.Token))
	if info.status != 200 || !strings.Contains(string(info.body.Data), `"userId":`+fmt.Sprint(u.UserID)) {
		t.Fatalf("info: %d %s", info.status, info.raw)
	}

	// Refresh with the cookie; the old credential is rotated out.
	ref := c.do("POST", "/api/v1/user/login/refresh", url.Values{}, map[string]string{"Cookie": ck.Name + "=" + ck.Value})
	if ref.status != 200 || !strings.Contains(string(ref.body.Data), `"cashTokenIds":[1]`) {
		t.Fatalf("refresh: %d %s", ref.status, ref.raw)
	}
	var refreshed session
	_ = json.Unmarshal(ref.body.Data, &refreshed)
	ck2 := ref.cookie("x_auth_refresh_token")
	if ck2 == nil || ck2.Value == ck.Value || refreshed.AccessToken.Token == "" {
		t.Fatalf("refresh did not rotate: %+v", ck2)
	}
	// The /v1 presentation takes the credential as a JSON body.
	req, _ := http.NewRequest("POST", c.base+"/v1/user/login/refresh", strings.NewReader(`{"refreshToken":"`+ck2.Value+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", testUA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var ck3 *http.Cookie
	for _, x := range resp.Cookies() {
		ck3 = x
	}
	if resp.StatusCode != 200 || ck3 == nil || ck3.Path != "/v1/user/login" {
		t.Fatalf("/v1 refresh: %d %+v", resp.StatusCode, ck3)
	}
	access := refreshed.AccessToken.Token

	// Profile.
	if a := c.do("POST", "/api/v1/user/update", url.Values{"displayName": {"Bob"}}, bearer(access)); a.status != 200 || !strings.Contains(string(a.body.Data), `"displayName":"Bob"`) {
		t.Fatalf("update: %d %s", a.status, a.raw)
	}
	payout := newWallet(t).addr // EIP-55 checksummed
	if a := c.do("POST", "/api/v1/user/payoutAddress", url.Values{"payoutAddress": {payout}}, bearer(access)); a.status != 200 || string(a.body.Data) != "{}" {
		t.Fatalf("payoutAddress: %d %s", a.status, a.raw)
	}
	if a := c.do("POST", "/api/v1/user/collateralPerSlot?collateralPerSlot=12.5", nil, bearer(access)); a.status != 200 || !a.body.Success {
		t.Fatalf("collateralPerSlot: %d %s", a.status, a.raw)
	}
	poll.Before(t, "the user info with the new name and collateral", time.Now().Add(poll.Timeout), func() bool {
		info = c.do("GET", "/api/v1/user/info", nil, bearer(access))
		return strings.Contains(string(info.body.Data), `"displayName":"Bob"`) && strings.Contains(string(info.body.Data), `"collateralPerSlot":"12.5"`)
	}, func() string { return fmt.Sprintf("%d %s", info.status, info.raw) })
	if !strings.Contains(string(info.body.Data), payout) {
		t.Fatalf("info after update: %s", info.body.Data)
	}

	// Accounts.
	accs := c.do("GET", "/api/v1/user/accounts", nil, bearer(access))
	if accs.status != 200 || strings.Count(string(accs.body.Data), `"code":"ETH","quantity":"0","lockedQuantity":"0","availableQuantity":"0"`) != 2 {
		t.Fatalf("accounts: %d %s", accs.status, accs.raw)
	}
	own := c.do("GET", fmt.Sprintf("/api/v1/user/account/%d", u.Accounts[1].AccountID), nil, bearer(access))
	if own.status != 200 || !strings.Contains(string(own.body.Data), `"type":2`) {
		t.Fatalf("own account: %d %s", own.status, own.raw)
	}
	other, _ := newWallet(t).login(t, c)
	for _, id := range []int64{other.User.Accounts[0].AccountID, 1 << 40} {
		if a := c.do("GET", fmt.Sprintf("/api/v1/user/account/%d", id), nil, bearer(access)); a.status != 403 || a.body.Code != 1 {
			t.Errorf("account %d of someone else or nobody: %d %s", id, a.status, a.raw)
		}
	}

	// JWKS names the key that signed the token.
	jwks := c.do("GET", "/.well-known/jwks.json", nil, nil)
	if jwks.status != 200 || !strings.Contains(string(jwks.raw), fmt.Sprint(tok.Data.Header["kid"])) {
		t.Fatalf("jwks: %d %s", jwks.status, jwks.raw)
	}

	// Logout ends the session: its newest credential no longer refreshes.
	out := c.do("POST", "/api/v1/user/logout", nil, bearer(access))
	if out.status != 200 || string(out.raw) != "{}" {
		t.Fatalf("logout: %d %s", out.status, out.raw)
	}
	if cl := out.cookie("x_auth_refresh_token"); cl == nil || cl.MaxAge >= 0 {
		t.Fatalf("logout does not clear the cookie: %+v", out.cookies)
	}
	if a := c.do("POST", "/api/v1/user/login/refresh", url.Values{"refreshToken": {ck3.Value}}, nil); a.status != 401 || a.body.Code != 1 {
		t.Fatalf("refresh after logout: %d %s", a.status, a.raw)
	}
}

func TestLoginRejections(t *testing.T) {
	t.Parallel()
	s := startStackWith(t, worldTempDir(t), map[string]string{"AUTH_LOGIN_BURST_PER_ADDRESS": "100", "AUTH_LOGIN_BURST_PER_IP": "100"})
	c := client{t: t, base: s.Addresses().REST}
	w := newWallet(t)
	verify := func(form url.Values, header map[string]string) answer {
		return c.do("POST", "/api/v1/user/login/verify", form, header)
	}
	ch := w.challenge(t, c)
	good := w.sign(t, ch.EIP712Message)
	otherSig := newWallet(t).sign(t, ch.EIP712Message)
	otherCh := newWallet(t).challenge(t, c)

	expired := w.challenge(t, c)
	if _, err := s.pool.Exec(context.Background(), `UPDATE login_nonces SET expires_at = now() - interval '1 second' WHERE nonce_hash = $1`, expired.NonceHash); err != nil {
		t.Fatal(err)
	}
	used := w.challenge(t, c)
	usedSig := w.sign(t, used.EIP712Message)
	if a := verify(url.Values{"addr": {w.addr}, "nonceHash": {used.NonceHash}, "signature": {usedSig}}, nil); a.status != 200 {
		t.Fatalf("first use: %d %s", a.status, a.raw)
	}
	sessionsBefore := s.count(t, "sessions")
	usersBefore := s.count(t, "users")

	// What each refusal must name: a signature case comes with a nonce
	// still unused and is refused for its signature, a nonce case for its
	// nonce.
	const badSignature, badNonce = "signature was not made by", "nonceHash is unknown"
	refusedFor := map[string]string{"wrong signer": badSignature, "bad v": badSignature,
		"unknown nonce": badNonce, "used nonce": badNonce, "expired nonce": badNonce, "nonce of another address": badNonce}

	// A challenge of its own, so that only v can be what is wrong.
	badV := w.challenge(t, c)
	v0 := w.sign(t, badV.EIP712Message)
	v0 = v0[:len(v0)-2] + "05" // v neither 0/1 nor 27/28
	for _, tc := range []struct {
		name   string
		path   string
		form   url.Values
		header map[string]string
		status int
		code   int
	}{
		{"login bad address", "/api/v1/user/login", url.Values{"addr": {"0x1234"}}, nil, 400, 1001},
		{"login no address", "/api/v1/user/login", url.Values{}, nil, 400, 1001},
		{"wrong signer", "", url.Values{"addr": {w.addr}, "nonceHash": {ch.NonceHash}, "signature": {otherSig}}, nil, 401, 1},
		{"unknown nonce", "", url.Values{"addr": {w.addr}, "nonceHash": {"0x00000000"}, "signature": {good}}, nil, 401, 1},
		{"used nonce", "", url.Values{"addr": {w.addr}, "nonceHash": {used.NonceHash}, "signature": {usedSig}}, nil, 401, 1},
		{"expired nonce", "", url.Values{"addr": {w.addr}, "nonceHash": {expired.NonceHash}, "signature": {w.sign(t, expired.EIP712Message)}}, nil, 401, 1},
		{"nonce of another address", "", url.Values{"addr": {w.addr}, "nonceHash": {otherCh.NonceHash}, "signature": {w.sign(t, otherCh.EIP712Message)}}, nil, 401, 1},
		{"malformed signature hex", "", url.Values{"addr": {w.addr}, "nonceHash": {ch.NonceHash}, "signature": {"0xzz" + good[4:]}}, nil, 400, 1001},
		{"short signature", "", url.Values{"addr": {w.addr}, "nonceHash": {ch.NonceHash}, "signature": {good[:40]}}, nil, 400, 1001},
		{"bad v", "", url.Values{"addr": {w.addr}, "nonceHash": {badV.NonceHash}, "signature": {v0}}, nil, 401, 1},
		{"malformed nonce", "", url.Values{"addr": {w.addr}, "nonceHash": {"0x1"}, "signature": {good}}, nil, 400, 1001},
		{"no user agent", "", url.Values{"addr": {w.addr}, "nonceHash": {ch.NonceHash}, "signature": {good}}, map[string]string{"User-Agent": ""}, 400, 1001},
		{"refresh without credential", "/api/v1/user/login/refresh", url.Values{}, nil, 401, 1},
		{"refresh unknown credential", "/api/v1/user/login/refresh", url.Values{"refreshToken": {"rt1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}, nil, 401, 1},
		{"refresh malformed credential", "/api/v1/user/login/refresh", url.Values{"refreshToken": {"nope"}}, nil, 401, 1},
	} {
		path := tc.path
		if path == "" {
			path = "/api/v1/user/login/verify"
		}
		a := c.do("POST", path, tc.form, tc.header)
		if a.status != tc.status || a.body.Code != tc.code || a.body.Success {
			t.Errorf("%s: %d code %d %s, want %d code %d", tc.name, a.status, a.body.Code, a.raw, tc.status, tc.code)
		}
		if why, ok := refusedFor[tc.name]; ok && !strings.Contains(a.body.Message, why) {
			t.Errorf("%s: refused with %q, want it refused for %q", tc.name, a.body.Message, why)
		}
		if a.status == 401 && a.header.Get("WWW-Authenticate") != "Bearer" {
			t.Errorf("%s: 401 without WWW-Authenticate: Bearer", tc.name)
		}
		if a.cookie("x_auth_refresh_token") != nil {
			t.Errorf("%s: a refresh cookie was set", tc.name)
		}
	}
	if n := s.count(t, "sessions"); n != sessionsBefore {
		t.Errorf("rejected logins created %d sessions", n-sessionsBefore)
	}
	if n := s.count(t, "users"); n != usersBefore {
		t.Errorf("rejected logins created %d users", n-usersBefore)
	}
	// The wrong-signer attempt used the challenge up.
	if a := verify(url.Values{"addr": {w.addr}, "nonceHash": {ch.NonceHash}, "signature": {good}}, nil); a.status != 401 {
		t.Errorf("nonce after a failed attempt: %d %s", a.status, a.raw)
	}
}

func TestRefreshTheftAndUserAgent(t *testing.T) {
	t.Parallel()
	s := startStack(t, worldTempDir(t))
	c := client{t: t, base: s.Addresses().REST}
	_, v := newWallet(t).login(t, c)
	first := v.cookie("x_auth_refresh_token").Value
	refresh := func(tok string, header map[string]string) answer {
		return c.do("POST", "/api/v1/user/login/refresh", url.Values{"refreshToken": {tok}}, header)
	}
	if a := refresh(first, map[string]string{"User-Agent": "other-agent/2"}); a.status != 401 || a.body.Code != 1 {
		t.Fatalf("refresh from another User-Agent: %d %s", a.status, a.raw)
	}
	a := refresh(first, nil)
	if a.status != 200 {
		t.Fatalf("refresh: %d %s", a.status, a.raw)
	}
	second := a.cookie("x_auth_refresh_token").Value
	var hashes int
	_ = s.pool.QueryRow(context.Background(), `SELECT count(*) FROM refresh_tokens WHERE token_hash = sha256(convert_to($1, 'UTF8'))`, second).Scan(&hashes)
	var plain int
	_ = s.pool.QueryRow(context.Background(), `SELECT count(*) FROM refresh_tokens WHERE encode(token_hash, 'escape') LIKE '%rt1.%'`).Scan(&plain)
	if hashes != 1 || plain != 0 {
		t.Fatalf("credentials are not stored as SHA-256 hashes: %d %d", hashes, plain)
	}
	// The rotated credential comes back: the whole session is revoked,
	// the newer credential with it.
	if a := refresh(first, nil); a.status != 401 || a.body.Code != 1 {
		t.Fatalf("reuse of a rotated credential: %d %s", a.status, a.raw)
	}
	if a := refresh(second, nil); a.status != 401 {
		t.Fatalf("newest credential after theft detection: %d %s", a.status, a.raw)
	}
	var reason string
	_ = s.pool.QueryRow(context.Background(), `SELECT revoke_reason FROM sessions`).Scan(&reason)
	if reason != "reuse" {
		t.Fatalf("session revoke reason %q", reason)
	}
}

func TestPrivateEndpointsNeedABearerToken(t *testing.T) {
	t.Parallel()
	s := startStack(t, worldTempDir(t))
	c := client{t: t, base: s.Addresses().REST}
	sess, _ := newWallet(t).login(t, c)
	tok := sess.AccessToken.Token
	parts := strings.Split(tok, ".")
	tampered := parts[0] + "." + parts[1] + "x." + parts[2]
	for _, ep := range []struct{ method, path string }{
		{"GET", "/api/v1/user/info"}, {"GET", "/api/v1/user/accounts"}, {"GET", "/api/v1/user/account/1"},
		{"POST", "/api/v1/user/update"}, {"POST", "/api/v1/user/payoutAddress"}, {"POST", "/api/v1/user/collateralPerSlot"},
		{"POST", "/api/v1/user/logout"}, {"POST", "/v1/user/logout"},
	} {
		for name, h := range map[string]map[string]string{
			"missing": nil, "not bearer": {"Authorization": "Basic " + tok}, "garbage": bearer("abc"), "tampered": bearer(tampered),
		} {
			a := c.do(ep.method, ep.path, nil, h)
			if a.status != 401 || a.body.Code != 1 || a.header.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("%s %s with %s token: %d %s %v", ep.method, ep.path, name, a.status, a.raw, a.header)
			}
		}
	}
}

func TestProfileValidation(t *testing.T) {
	t.Parallel()
	s := startStack(t, worldTempDir(t))
	c := client{t: t, base: s.Addresses().REST}
	sess, _ := newWallet(t).login(t, c)
	h := bearer(sess.AccessToken.Token)
	addr := newWallet(t).addr
	badSum := addr[:2] + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'f' {
			return r - 32
		} else if r >= 'A' && r <= 'F' {
			return r + 32
		}
		return r
	}, addr[2:])
	for _, tc := range []struct {
		path, param, value string
		status, code       int
	}{
		{"/api/v1/user/update", "displayName", "", 400, 1001},
		{"/api/v1/user/update", "displayName", strings.Repeat("x", 65), 400, 1001},
		{"/api/v1/user/payoutAddress", "payoutAddress", "0x12", 400, 1001},
		{"/api/v1/user/payoutAddress", "payoutAddress", badSum, 400, 1001},
		{"/api/v1/user/payoutAddress", "payoutAddress", strings.ToLower(addr), 200, 0},
		{"/api/v1/user/collateralPerSlot", "collateralPerSlot", "-0.1", 200, 2001},
		{"/api/v1/user/collateralPerSlot", "collateralPerSlot", "100.0001", 200, 2002},
		{"/api/v1/user/collateralPerSlot", "collateralPerSlot", "100", 200, 0},
		{"/api/v1/user/collateralPerSlot", "collateralPerSlot", "0", 200, 0},
		{"/api/v1/user/collateralPerSlot", "collateralPerSlot", "abc", 400, 1001},
	} {
		a := c.do("POST", tc.path, url.Values{tc.param: {tc.value}}, h)
		if a.status != tc.status || a.body.Code != tc.code {
			t.Errorf("%s %s=%q: %d %s, want %d code %d", tc.path, tc.param, tc.value, a.status, a.raw, tc.status, tc.code)
		}
	}
}

// TestLoginIsRateLimited: challenges for an address spend none of its
// logins; proven logins do, and the third within the burst is refused.
func TestLoginIsRateLimited(t *testing.T) {
	t.Parallel()
	dir := worldTempDir(t)
	s := startStackWith(t, dir, map[string]string{"AUTH_LOGIN_RATE_PER_ADDRESS": "1", "AUTH_LOGIN_BURST_PER_ADDRESS": "2"})
	c := client{t: t, base: s.Addresses().REST}
	w := newWallet(t)
	for i := 0; i < 5; i++ {
		if a := c.do("POST", "/api/v1/user/login", url.Values{"addr": {w.addr}}, nil); a.status != 200 {
			t.Fatalf("unproven attempt %d: %d %s", i, a.status, a.raw)
		}
	}
	for i := 0; i < 2; i++ {
		w.login(t, c)
	}
	ch := w.challenge(t, c)
	a := c.do("POST", "/api/v1/user/login/verify", url.Values{"addr": {w.addr}, "nonceHash": {ch.NonceHash}, "signature": {w.sign(t, ch.EIP712Message)}}, nil)
	if a.status != 429 || a.body.Code != 20 || a.header.Get("Retry-After") == "" || a.header.Get("Retry-After") == "0" {
		t.Fatalf("third proven login: %d %s %v", a.status, a.raw, a.header)
	}
	// Another address from the same client still may.
	newWallet(t).login(t, c)
	s2 := startStackWith(t, worldTempDir(t), map[string]string{"AUTH_LOGIN_RATE_PER_IP": "1", "AUTH_LOGIN_BURST_PER_IP": "1"})
	c2 := client{t: t, base: s2.Addresses().REST}
	c2.do("POST", "/api/v1/user/login", url.Values{"addr": {newWallet(t).addr}}, nil)
	if a := c2.do("POST", "/api/v1/user/login", url.Values{"addr": {newWallet(t).addr}}, nil); a.status != 429 || a.body.Code != 20 {
		t.Fatalf("per-IP limit: %d %s", a.status, a.raw)
	}
}
