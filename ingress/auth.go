package ingress

import (
	"crypto/ecdsa"
	"os"
	"time"

	"blockspace.exchange/ingress/internal/ratelimit"
	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/config"
)

// AuthConfig configures login, sessions and access tokens.
type AuthConfig struct {
	// SigningKey signs access tokens (ES256, P-256). Required.
	SigningKey     *ecdsa.PrivateKey
	Product        string        // AUTH_PRODUCT: the typed data's domain name is "<product> Login" (Blockspace Exchange)
	LoginHost      string        // AUTH_LOGIN_DOMAIN: the typed data's message.domain; "" = request Host
	AccessTTL      time.Duration // AUTH_ACCESS_TTL: access token lifetime (1h, 1m to 24h)
	SessionTTL     time.Duration // AUTH_SESSION_TTL: session lifetime from login (168h, 1m to 90 days)
	NonceTTL       time.Duration // AUTH_NONCE_TTL: login challenge lifetime (5m, 10s to 1h)
	RatePerIP      Rate          // AUTH_LOGIN_RATE_PER_IP / AUTH_LOGIN_BURST_PER_IP (60/min, 30)
	RatePerAddress Rate          // AUTH_LOGIN_RATE_PER_ADDRESS / AUTH_LOGIN_BURST_PER_ADDRESS (10/min, 10): proven logins
	ClientIPHeader string        // AUTH_CLIENT_IP_HEADER: header a trusted gateway puts the client IP in
	KeysRefresh    time.Duration // AUTH_KEYS_REFRESH: how often verification keys are reloaded (30s, 1s to 1h)
	NonceSweep     time.Duration // AUTH_NONCE_SWEEP: how often expired login challenges are deleted (1m, 10ms to 1h)
}

// defaultAuth is AuthConfig with no variable set.
func defaultAuth() AuthConfig {
	return AuthConfig{
		Product:   "Blockspace Exchange",
		AccessTTL: time.Hour, SessionTTL: 7 * 24 * time.Hour, NonceTTL: 5 * time.Minute,
		RatePerIP:      Rate{PerMinute: 60, Burst: 30},
		RatePerAddress: Rate{PerMinute: 10, Burst: 10},
		KeysRefresh:    30 * time.Second, NonceSweep: time.Minute,
	}
}

// fromEnv reads the AUTH_* variables over a. The signing key comes from
// AUTH_SIGNING_KEY_FILE (a PEM file) or AUTH_SIGNING_KEY (PEM text); when
// neither is set SigningKey stays nil and the caller must provide one
// (the dev stack generates and keeps one under its data directory).
func (a AuthConfig) fromEnv(r *config.Reader) AuthConfig {
	a.Product = r.String("AUTH_PRODUCT", a.Product)
	a.LoginHost = r.String("AUTH_LOGIN_DOMAIN", a.LoginHost)
	a.AccessTTL = r.Duration("AUTH_ACCESS_TTL", a.AccessTTL, time.Minute, 24*time.Hour)
	a.SessionTTL = r.Duration("AUTH_SESSION_TTL", a.SessionTTL, time.Minute, 90*24*time.Hour)
	a.NonceTTL = r.Duration("AUTH_NONCE_TTL", a.NonceTTL, 10*time.Second, time.Hour)
	a.RatePerIP = a.RatePerIP.fromEnv(r, "AUTH_LOGIN_RATE_PER_IP", "AUTH_LOGIN_BURST_PER_IP")
	a.RatePerAddress = a.RatePerAddress.fromEnv(r, "AUTH_LOGIN_RATE_PER_ADDRESS", "AUTH_LOGIN_BURST_PER_ADDRESS")
	a.ClientIPHeader = r.String("AUTH_CLIENT_IP_HEADER", a.ClientIPHeader)
	a.KeysRefresh = r.Duration("AUTH_KEYS_REFRESH", a.KeysRefresh, time.Second, time.Hour)
	a.NonceSweep = r.Duration("AUTH_NONCE_SWEEP", a.NonceSweep, 10*time.Millisecond, time.Hour)
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
		if a.SigningKey, err = auth.ParsePrivateKey(data); err != nil {
			r.Fail("AUTH_SIGNING_KEY_FILE=%s: %v", file, err)
		}
	case text != "":
		var err error
		if a.SigningKey, err = auth.ParsePrivateKey([]byte(text)); err != nil {
			r.Fail("AUTH_SIGNING_KEY: %v", err)
		}
	}
	return a
}

// Rate is a token bucket of requests per client: Burst at once, refilled
// at PerMinute. PerMinute 0 disables the limit.
type Rate struct {
	PerMinute float64
	Burst     float64
}

// fromEnv reads a rate from its two variables over rt: rateVar, the
// refill per minute (0 to 2^30; 0 disables the limit), and burstVar, the
// requests at once (1 to 2^30).
func (rt Rate) fromEnv(r *config.Reader, rateVar, burstVar string) Rate {
	return Rate{
		PerMinute: float64(r.Int(rateVar, int(rt.PerMinute), 0, 1<<30)),
		Burst:     float64(r.Int(burstVar, int(rt.Burst), 1, 1<<30)),
	}
}

func (rt Rate) limit() ratelimit.Rate { return ratelimit.Rate(rt) }
