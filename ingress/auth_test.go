package ingress_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/ingress"
	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
)

// newAuthService starts an ingress without Kafka, which serves login,
// sessions and the profile routes only, signing with key.
func newAuthService(t *testing.T, pool *pgxpool.Pool, key *ecdsa.PrivateKey) (*ingress.Service, error) {
	t.Helper()
	env, _ := environment.Lookup("dev")
	// The signing keys are reloaded less often than a test waits
	// (poll.Timeout), so what a test sees change was not brought about by
	// a reload of the keys.
	return ingress.New(t.Context(), ingress.Config{Environment: env, MaxInFlight: 64, Auth: ingress.AuthConfig{
		SigningKey: key, Product: "Test", AccessTTL: time.Hour, SessionTTL: time.Hour, NonceTTL: time.Minute,
		RatePerIP: ingress.Rate{PerMinute: 1000, Burst: 1000}, RatePerAddress: ingress.Rate{PerMinute: 1000, Burst: 1000}, KeysRefresh: time.Hour,
	}}, ingress.Deps{Pool: pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DBErr: func() error { return nil }})
}

func newSigningKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// sec1PEM encodes key as openssl ecparam -genkey -noout writes it.
func sec1PEM(t *testing.T, key *ecdsa.PrivateKey) string {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAuthConfigSigningKey(t *testing.T) {
	key := newSigningKey(t)
	pkcs8, err := auth.EncodePrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sec1File := writeFile(t, "sec1.pem", sec1PEM(t, key))
	garbageFile := writeFile(t, "garbage.pem", "-----BEGIN EC PRIVATE KEY-----\nbm90IGEga2V5\n-----END EC PRIVATE KEY-----\n")
	missing := filepath.Join(t.TempDir(), "absent.pem")

	tests := []struct {
		name    string
		env     map[string]string
		wantKey bool     // the configured key is key
		errs    []string // each appears in the error; none = no error
	}{
		{name: "neither set", env: map[string]string{}},
		{name: "file SEC 1", env: map[string]string{"AUTH_SIGNING_KEY_FILE": sec1File}, wantKey: true},
		{name: "text PKCS 8", env: map[string]string{"AUTH_SIGNING_KEY": string(pkcs8)}, wantKey: true},
		{name: "text SEC 1", env: map[string]string{"AUTH_SIGNING_KEY": sec1PEM(t, key)}, wantKey: true},
		{
			name: "both set",
			env:  map[string]string{"AUTH_SIGNING_KEY_FILE": sec1File, "AUTH_SIGNING_KEY": string(pkcs8)},
			errs: []string{"AUTH_SIGNING_KEY_FILE and AUTH_SIGNING_KEY are both set"},
		},
		{name: "file missing", env: map[string]string{"AUTH_SIGNING_KEY_FILE": missing}, errs: []string{"AUTH_SIGNING_KEY_FILE", "absent.pem"}},
		{name: "file malformed PEM", env: map[string]string{"AUTH_SIGNING_KEY_FILE": garbageFile}, errs: []string{"AUTH_SIGNING_KEY_FILE=" + garbageFile, "parse signing key"}},
		{name: "text without PEM", env: map[string]string{"AUTH_SIGNING_KEY": "0x0123abcd"}, errs: []string{"AUTH_SIGNING_KEY:", "no PEM block"}},
		{name: "text public key", env: map[string]string{"AUTH_SIGNING_KEY": mustPublicPEM(t, key)}, errs: []string{"AUTH_SIGNING_KEY:", `"PUBLIC KEY"`}},
		{name: "text P-384", env: map[string]string{"AUTH_SIGNING_KEY": sec1PEM(t, p384)}, errs: []string{"AUTH_SIGNING_KEY:", "P-256"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := config.FromMap(tt.env)
			cfg := ingress.ConfigFromEnv(r).Auth
			err := r.Err()
			if len(tt.errs) == 0 && err != nil {
				t.Fatalf("error %v", err)
			}
			for _, want := range tt.errs {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want it to say %q", err, want)
				}
			}
			switch {
			case tt.wantKey && (cfg.SigningKey == nil || !cfg.SigningKey.Equal(key)):
				t.Errorf("signing key %v, want the configured one", cfg.SigningKey)
			case !tt.wantKey && cfg.SigningKey != nil:
				t.Errorf("a signing key was configured")
			}
		})
	}
}

func mustPublicPEM(t *testing.T, key *ecdsa.PrivateKey) string {
	t.Helper()
	s, err := auth.EncodePublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestIngressRefusesARetiredKey: an ingress configured with a key whose
// row an operator retired does not start, so it cannot sign tokens that
// verifiers are about to drop; a second, new key starts beside the first.
func TestIngressRefusesARetiredKey(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	oldKey, newKey := newSigningKey(t), newSigningKey(t)
	if _, err := newAuthService(t, pool, oldKey); err != nil {
		t.Fatal(err)
	}
	if _, err := newAuthService(t, pool, newKey); err != nil {
		t.Fatalf("a second key beside the first: %v", err)
	}
	kid := auth.KeyID(&oldKey.PublicKey)
	if _, err := pool.Exec(t.Context(), `UPDATE signing_keys SET not_after = now() + interval '1 hour' WHERE kid = $1`, kid); err != nil {
		t.Fatal(err)
	}
	if _, err := newAuthService(t, pool, oldKey); err == nil || !strings.Contains(err.Error(), kid) {
		t.Fatalf("ingress with a retired key: %v, want a refusal naming %s", err, kid)
	}
	if _, err := newAuthService(t, pool, newKey); err != nil {
		t.Fatalf("ingress with the live key after the old one retired: %v", err)
	}
}
