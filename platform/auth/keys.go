package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"sort"
)

var (
	errWrongType = errors.New("token is not an access token")
	errNoUser    = errors.New("token names no user")
)

// KeyID derives a key's kid as its RFC 7638 JWK thumbprint, so that the
// same key always has the same id in every process and no registry of
// names is needed.
func KeyID(pub *ecdsa.PublicKey) string {
	j := toJWK("", pub)
	// Members in lexicographic order, no whitespace, as RFC 7638 requires.
	canonical := `{"crv":"` + j.Crv + `","kty":"` + j.Kty + `","x":"` + j.X + `","y":"` + j.Y + `"}`
	sum := sha256.Sum256([]byte(canonical))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// EncodePublicKey writes pub as a PEM SubjectPublicKeyInfo block.
func EncodePublicKey(pub *ecdsa.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("encode public key: %w", err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), nil
}

// ParsePublicKey reads a PEM SubjectPublicKeyInfo block holding a P-256 key.
func ParsePublicKey(data []byte) (*ecdsa.PublicKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New("parse public key: no PEM PUBLIC KEY block")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse public key: %w", err)
	}
	pub, ok := k.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, errors.New("parse public key: not an ECDSA P-256 key")
	}
	return pub, nil
}

// ParsePrivateKey reads a PEM P-256 private key, PKCS #8 ("PRIVATE KEY")
// or SEC 1 ("EC PRIVATE KEY"), as openssl writes either.
func ParsePrivateKey(data []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("parse signing key: no PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("parse signing key: PEM block %q, want PRIVATE KEY or EC PRIVATE KEY", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("parse signing key: %w", err)
	}
	priv, ok := key.(*ecdsa.PrivateKey)
	if !ok || priv.Curve != elliptic.P256() {
		return nil, errors.New("parse signing key: not an ECDSA P-256 key (ES256 needs P-256)")
	}
	return priv, nil
}

// EncodePrivateKey writes priv as a PEM PKCS #8 block.
func EncodePrivateKey(priv *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encode signing key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// JWK is one public key of a JSON Web Key Set (RFC 7517).
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	Kid string `json:"kid,omitempty"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
}

func toJWK(kid string, pub *ecdsa.PublicKey) JWK {
	// Bytes is the uncompressed point 0x04 || X || Y, 32 bytes each on P-256.
	raw, err := pub.Bytes()
	if err != nil || len(raw) != 65 {
		panic(fmt.Sprintf("auth: not a P-256 public key: %v", err)) // keys are checked on load
	}
	enc := base64.RawURLEncoding.EncodeToString
	j := JWK{Kty: "EC", Crv: "P-256", X: enc(raw[1:33]), Y: enc(raw[33:])}
	if kid != "" {
		j.Kid, j.Use, j.Alg = kid, "sig", "ES256"
	}
	return j
}

// KeySet is an immutable set of verification keys by kid.
type KeySet map[string]*ecdsa.PublicKey

// JWKS encodes the set as {"keys":[...]}, sorted by kid.
func (ks KeySet) JWKS() ([]byte, error) {
	kids := make([]string, 0, len(ks))
	for kid := range ks {
		kids = append(kids, kid)
	}
	sort.Strings(kids)
	out := struct {
		Keys []JWK `json:"keys"`
	}{Keys: make([]JWK, 0, len(kids))}
	for _, kid := range kids {
		out.Keys = append(out.Keys, toJWK(kid, ks[kid]))
	}
	return json.Marshal(out)
}
