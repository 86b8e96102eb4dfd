package loadtest

import (
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"blockspace.exchange/platform/eip712"
	"github.com/ethereum/go-ethereum/crypto"
)

// Session is what a wallet login answers that load commands use: the
// access token and the user's accounts.
type Session struct {
	User struct {
		UserID   int64 `json:"userId"`
		Accounts []struct {
			AccountID int64 `json:"accountId"`
			Type      int   `json:"type"`
		} `json:"accounts"`
	} `json:"user"`
	AccessToken struct {
		Token string `json:"token"`
	} `json:"accessToken"`
}

// Account returns the id of the user's account of type typ (1 current,
// 2 preconf trading), 0 when it has none.
func (s Session) Account(typ int) int64 {
	for _, a := range s.User.Accounts {
		if a.Type == typ {
			return a.AccountID
		}
	}
	return 0
}

// Login logs the wallet of key in at the REST base as a wallet library
// does: challenge, EIP-712 signature, verify.
func Login(client *http.Client, base string, key *ecdsa.PrivateKey) (Session, error) {
	addr := crypto.PubkeyToAddress(key.PublicKey).Hex()
	var ch struct {
		EIP712Message string `json:"eip712Message"`
		NonceHash     string `json:"nonceHash"`
	}
	if err := PostForm(client, base+"/api/v1/user/login", "", url.Values{"addr": {addr}}, &ch); err != nil {
		return Session{}, err
	}
	sig, err := eip712.Sign(key, ch.EIP712Message)
	if err != nil {
		return Session{}, err
	}
	var sess Session
	err = PostForm(client, base+"/api/v1/user/login/verify", "",
		url.Values{"addr": {addr}, "nonceHash": {ch.NonceHash}, "signature": {sig}}, &sess)
	return sess, err
}

// PostForm posts form to u, with a bearer token when given, and decodes
// the envelope's data into data. An answer other than 200 with success
// true is an error that quotes it.
func PostForm(client *http.Client, u, bearer string, form url.Values, data any) error {
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", "exchange-loadtest")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var env struct {
		Success bool            `json:"success"`
		Data    json.RawMessage `json:"data"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &env) != nil || !env.Success {
		return fmt.Errorf("POST %s: %s %s", u, resp.Status, body)
	}
	if data == nil {
		return nil
	}
	return json.Unmarshal(env.Data, data)
}
