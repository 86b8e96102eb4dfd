// Command devvalidator registers a validator with a running dev stack the
// way a client does: it logs in with an Ethereum key (EIP-712), signs the
// registration message with a BLS key derived from a seed and posts it to
// /api/v1/validator/register. The dev beacon then gives the validator its
// share of the slots from the next epoch it assigns.
//
//	go run ./deploy/cmd/devvalidator -seed "my dev validator 0000000000000001"
//
// Without -key a new Ethereum key is generated and printed. Dev use only.
package main

import (
	"crypto/ecdsa"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"blockspace.exchange/ingress/devkit"
	"blockspace.exchange/platform/eip712"
	"blockspace.exchange/platform/environment"
)

func main() {
	base := flag.String("base", "http://127.0.0.1:8080", "REST base address of the dev stack")
	keyHex := flag.String("key", "", "the user's Ethereum private key, 0x hex (default: a new one)")
	seed := flag.String("seed", "", "seed of the validator's BLS key, at least 32 bytes (required)")
	chainID := flag.Int64("chain", environment.DevChainID, "chain id the registration is signed for")
	flag.Parse()
	if err := run(*base, *keyHex, *seed, *chainID); err != nil {
		fmt.Fprintln(os.Stderr, "devvalidator:", err)
		os.Exit(1)
	}
}

func run(base, keyHex, seed string, chainID int64) error {
	if len(seed) < 32 {
		return fmt.Errorf("-seed must be at least 32 bytes, got %d", len(seed))
	}
	key, err := userKey(keyHex)
	if err != nil {
		return err
	}
	addr := strings.ToLower(crypto.PubkeyToAddress(key.PublicKey).Hex())
	token, err := login(base, key, addr)
	if err != nil {
		return err
	}
	pubkey, sig, err := devkit.SignValidatorRegistration([]byte(seed), chainID, addr)
	if err != nil {
		return err
	}
	body, _ := json.Marshal([]map[string]string{{"pubkey": pubkey, "signature": sig}})
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/validator/register", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	out, err := do(req)
	if err != nil {
		return err
	}
	fmt.Printf("user %s\nvalidator %s\n%s\n", addr, pubkey, out)
	return nil
}

func userKey(keyHex string) (*ecdsa.PrivateKey, error) {
	if keyHex == "" {
		k, err := crypto.GenerateKey()
		if err == nil {
			fmt.Println("new user key", hexutil.Encode(crypto.FromECDSA(k)))
		}
		return k, err
	}
	return crypto.HexToECDSA(strings.TrimPrefix(keyHex, "0x"))
}

// login runs the wallet login of docs/api.md and returns the access token.
func login(base string, key *ecdsa.PrivateKey, addr string) (string, error) {
	var ch struct {
		EIP712Message string `json:"eip712Message"`
		NonceHash     string `json:"nonceHash"`
	}
	if err := postForm(base+"/api/v1/user/login", url.Values{"addr": {addr}}, &ch); err != nil {
		return "", err
	}
	sig, err := eip712.Sign(key, ch.EIP712Message)
	if err != nil {
		return "", fmt.Errorf("login challenge: %w", err)
	}
	var s struct {
		AccessToken struct {
			Token string `json:"token"`
		} `json:"accessToken"`
	}
	err = postForm(base+"/api/v1/user/login/verify", url.Values{"addr": {addr}, "nonceHash": {ch.NonceHash}, "signature": {sig}}, &s)
	return s.AccessToken.Token, err
}

func postForm(u string, form url.Values, into any) error {
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", "devvalidator")
	out, err := do(req)
	if err != nil {
		return err
	}
	var env struct {
		Success bool            `json:"success"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(out, &env); err != nil || !env.Success {
		return fmt.Errorf("POST %s: %s", u, out)
	}
	return json.Unmarshal(env.Data, into)
}

func do(req *http.Request) ([]byte, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: HTTP %d: %s", req.Method, req.URL, resp.StatusCode, out)
	}
	return out, nil
}
