package ingress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"blockspace.exchange/ingress/internal/login"
	"blockspace.exchange/ingress/internal/ratelimit"
	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/config"
)

// AuthConfig configures login, sessions and access tokens.
type AuthConfig struct {
	// SigningKey signs access tokens (ES256, P-256). Required.
	SigningKey     *ecdsa.PrivateKey
	Product        string        // AUTH_PRODUCT: the typed data's domain name is "<product> Login"
	LoginHost      string        // AUTH_LOGIN_DOMAIN: the typed data's message.domain; "" = request Host
	AccessTTL      time.Duration // AUTH_ACCESS_TTL: access token lifetime (1h)
	SessionTTL     time.Duration // AUTH_SESSION_TTL: session lifetime from login (168h)
	NonceTTL       time.Duration // AUTH_NONCE_TTL: login challenge lifetime (5m)
	RatePerIP      login.Rate    // AUTH_LOGIN_RATE_PER_IP / AUTH_LOGIN_BURST_PER_IP (60/min, 30)
	RatePerAddress login.Rate    // AUTH_LOGIN_RATE_PER_ADDRESS / AUTH_LOGIN_BURST_PER_ADDRESS (10/min, 10): proven logins
	ClientIPHeader string        // AUTH_CLIENT_IP_HEADER: header a trusted gateway puts the client IP in
	KeysRefresh    time.Duration // AUTH_KEYS_REFRESH: how often verification keys are reloaded (30s)
	NonceSweep     time.Duration // AUTH_NONCE_SWEEP: how often expired login challenges are deleted (1m)
}

// AuthConfigFromEnv reads AuthConfig. The signing key comes from
// AUTH_SIGNING_KEY_FILE (a PEM file) or AUTH_SIGNING_KEY (PEM text); when
// neither is set SigningKey stays nil and the caller must provide one
// (the dev stack generates and keeps one under its data directory).
func AuthConfigFromEnv(r *config.Reader) AuthConfig {
	cfg := AuthConfig{
		Product:        r.String("AUTH_PRODUCT", "Blockspace Exchange"),
		LoginHost:      r.String("AUTH_LOGIN_DOMAIN", ""),
		AccessTTL:      r.Duration("AUTH_ACCESS_TTL", time.Hour, time.Minute, 24*time.Hour),
		SessionTTL:     r.Duration("AUTH_SESSION_TTL", 7*24*time.Hour, time.Minute, 90*24*time.Hour),
		NonceTTL:       r.Duration("AUTH_NONCE_TTL", 5*time.Minute, 10*time.Second, time.Hour),
		RatePerIP:      ratelimit.FromEnv(r, "AUTH_LOGIN_RATE_PER_IP", 60, "AUTH_LOGIN_BURST_PER_IP", 30),
		RatePerAddress: ratelimit.FromEnv(r, "AUTH_LOGIN_RATE_PER_ADDRESS", 10, "AUTH_LOGIN_BURST_PER_ADDRESS", 10),
		ClientIPHeader: r.String("AUTH_CLIENT_IP_HEADER", ""),
		KeysRefresh:    r.Duration("AUTH_KEYS_REFRESH", 30*time.Second, time.Second, time.Hour),
		NonceSweep:     r.Duration("AUTH_NONCE_SWEEP", time.Minute, 10*time.Millisecond, time.Hour),
	}
	file, text := r.String("AUTH_SIGNING_KEY_FILE", ""), r.String("AUTH_SIGNING_KEY", "")
	switch {
	case file != "" && text != "":
		r.Fail("AUTH_SIGNING_KEY_FILE and AUTH_SIGNING_KEY are both set; set one")
	case file != "":
		data, err := os.ReadFile(file)
		if err != nil {
			r.Fail("AUTH_SIGNING_KEY_FILE: %v", err)
			break
		}
		if cfg.SigningKey, err = auth.ParsePrivateKey(data); err != nil {
			r.Fail("AUTH_SIGNING_KEY_FILE=%s: %v", file, err)
		}
	case text != "":
		var err error
		if cfg.SigningKey, err = auth.ParsePrivateKey([]byte(text)); err != nil {
			r.Fail("AUTH_SIGNING_KEY: %v", err)
		}
	}
	return cfg
}

// LoadOrCreateSigningKey reads the PEM key at path, or generates a P-256
// key and writes it there (directory 0700, file 0600) when none exists.
// It is for the dev stack; production configures its key.
func LoadOrCreateSigningKey(path string) (*ecdsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err == nil {
		return auth.ParsePrivateKey(data)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read signing key: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate signing key: %w", err)
	}
	pemBytes, err := auth.EncodePrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create key directory: %w", err)
	}
	if err := os.WriteFile(path, pemBytes, 0o600); err != nil {
		return nil, fmt.Errorf("write signing key: %w", err)
	}
	return key, nil
}
