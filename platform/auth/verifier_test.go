package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

type fixture struct {
	key *ecdsa.PrivateKey
	kid string
	v   *Verifier
	now time.Time
}

func newFixture(t testing.TB) *fixture {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{key: key, kid: KeyID(&key.PublicKey), now: time.Unix(1_800_000_000, 0)}
	f.v = NewVerifier(VerifierConfig{
		Keys:   func(context.Context) (KeySet, error) { return KeySet{f.kid: &f.key.PublicKey}, nil },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:    func() time.Time { return f.now },
	})
	if err := f.v.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) claims(iat time.Time) *Claims {
	return &Claims{
		User: TokenUser{UserID: 7, Address: "0xabc", Roles: []string{RoleUser}}, AccessType: AccessType, SessionID: 3,
		RegisteredClaims: jwt.RegisteredClaims{IssuedAt: jwt.NewNumericDate(iat), ExpiresAt: jwt.NewNumericDate(iat.Add(time.Hour))},
	}
}

func (f *fixture) sign(t testing.TB, method jwt.SigningMethod, key any, kid string, c *Claims) string {
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerifierAcceptsES256AndCaches(t *testing.T) {
	f := newFixture(t)
	tok := f.sign(t, jwt.SigningMethodES256, f.key, f.kid, f.claims(f.now))
	c, err := f.v.Verify(context.Background(), tok)
	if err != nil || c.User.UserID != 7 || c.SessionID != 3 {
		t.Fatalf("valid token: %+v %v", c, err)
	}
	if f.v.cache.len() != 1 {
		t.Fatalf("cache holds %d tokens", f.v.cache.len())
	}
	// The cache honours exp; the parser then allows the leeway only.
	if f.v.cache.get(tok, f.now.Add(time.Hour)) != nil {
		t.Fatal("cache answers past exp")
	}
	f.now = f.now.Add(time.Hour + time.Minute)
	if _, err := f.v.Verify(context.Background(), tok); err == nil {
		t.Fatal("expired cached token accepted")
	}
}

func TestVerifierRejects(t *testing.T) {
	f := newFixture(t)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pubDER, _ := x509.MarshalPKIXPublicKey(&f.key.PublicKey)
	good := f.sign(t, jwt.SigningMethodES256, f.key, f.kid, f.claims(f.now))
	parts := strings.Split(good, ".")
	notAccess := f.claims(f.now)
	notAccess.AccessType = "refresh_token"
	noExp := f.claims(f.now)
	noExp.ExpiresAt = nil
	for name, tok := range map[string]string{
		"none":                  f.sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, f.kid, f.claims(f.now)),
		"HS256 with public key": f.sign(t, jwt.SigningMethodHS256, pubDER, f.kid, f.claims(f.now)),
		"wrong kid":             f.sign(t, jwt.SigningMethodES256, f.key, "nope", f.claims(f.now)),
		"no kid":                f.sign(t, jwt.SigningMethodES256, f.key, "", f.claims(f.now)),
		"other key, same kid":   f.sign(t, jwt.SigningMethodES256, other, f.kid, f.claims(f.now)),
		"expired":               f.sign(t, jwt.SigningMethodES256, f.key, f.kid, f.claims(f.now.Add(-2*time.Hour))),
		"not yet valid":         f.sign(t, jwt.SigningMethodES256, f.key, f.kid, f.claims(f.now.Add(time.Hour))),
		"not an access token":   f.sign(t, jwt.SigningMethodES256, f.key, f.kid, notAccess),
		"no exp":                f.sign(t, jwt.SigningMethodES256, f.key, f.kid, noExp),
		"tampered payload":      parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"user":{"userId":8},"access_type":"access_token","iat":1800000000,"exp":1800003600}`)) + "." + parts[2],
		"tampered signature":    parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2])),
		"garbage":               "a.b.c",
		"empty":                 "",
	} {
		if _, err := f.v.Verify(context.Background(), tok); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%s: accepted or wrong error: %v", name, err)
		}
	}
	if f.v.cache.len() != 0 {
		t.Errorf("rejected tokens were cached: %d", f.v.cache.len())
	}
}

func TestWithdrawnKeyEmptiesTheCache(t *testing.T) {
	f := newFixture(t)
	tok := f.sign(t, jwt.SigningMethodES256, f.key, f.kid, f.claims(f.now))
	if _, err := f.v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	f.v.cfg.Keys = func(context.Context) (KeySet, error) { return KeySet{}, nil }
	_ = f.v.Reload(context.Background())
	if _, err := f.v.Verify(context.Background(), tok); err == nil {
		t.Fatal("token of a withdrawn key still accepted")
	}
}

func TestCacheIsBounded(t *testing.T) {
	c := newTokenCache(64)
	now := time.Now()
	for i := 0; i < 10_000; i++ {
		c.put(strings.Repeat("x", i%97)+string(rune(i)), &Claims{}, now.Add(time.Hour), now)
	}
	if n := c.len(); n > 64+cacheShards {
		t.Fatalf("cache grew to %d", n)
	}
}

func TestKeysRoundTripAndJWKS(t *testing.T) {
	f := newFixture(t)
	pemText, err := EncodePublicKey(&f.key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ParsePublicKey([]byte(pemText))
	if err != nil || KeyID(pub) != f.kid {
		t.Fatalf("public key round trip: %v", err)
	}
	privPEM, _ := EncodePrivateKey(f.key)
	priv, err := ParsePrivateKey(privPEM)
	if err != nil || !priv.Equal(f.key) {
		t.Fatalf("private key round trip: %v", err)
	}
	js, _ := KeySet{f.kid: pub}.JWKS()
	if !strings.Contains(string(js), `"kid":"`+f.kid+`"`) || !strings.Contains(string(js), `"alg":"ES256"`) {
		t.Fatalf("jwks: %s", js)
	}
}

func TestBearerToken(t *testing.T) {
	for in, want := range map[string]string{"Bearer abc": "abc", "bearer  abc ": "abc", "Basic abc": "", "Bearer ": "", "": ""} {
		got, ok := BearerToken(in)
		if got != want || ok != (want != "") {
			t.Errorf("%q: %q %v", in, got, ok)
		}
	}
}

// FuzzVerify feeds arbitrary token strings to the parser: it must never
// panic and never accept anything it was not given a valid signature for.
func FuzzVerify(f *testing.F) {
	fx := newFixture(f)
	good := fx.sign(f, jwt.SigningMethodES256, fx.key, fx.kid, fx.claims(fx.now))
	f.Add(good)
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("a.b.c")
	f.Add("")
	f.Add(strings.Replace(good, ".", "..", 1))
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := fx.v.Verify(context.Background(), tok)
		if err == nil && tok != good {
			// Only a re-encoding of the good token may verify.
			if c.User.UserID != 7 {
				t.Fatalf("accepted a token that was never signed: %q", tok)
			}
		}
	})
}

func BenchmarkVerifyCached(b *testing.B) {
	f := newFixture(b)
	tok := f.sign(b, jwt.SigningMethodES256, f.key, f.kid, f.claims(f.now))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := f.v.Verify(context.Background(), tok); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkVerifyUncached(b *testing.B) {
	f := newFixture(b)
	tok := f.sign(b, jwt.SigningMethodES256, f.key, f.kid, f.claims(f.now))
	for b.Loop() {
		f.v.cache.clear()
		if _, err := f.v.Verify(context.Background(), tok); err != nil {
			b.Fatal(err)
		}
	}
}
