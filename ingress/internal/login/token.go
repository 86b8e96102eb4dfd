package login

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"blockspace.exchange/platform/auth"
)

// Signer issues access tokens with one ES256 key. Its kid is the key's
// JWK thumbprint, published in signing_keys before the first token.
type Signer struct {
	kid string
	key *ecdsa.PrivateKey
	ttl time.Duration
}

// NewSigner signs with key; kid must be the id under which the public
// key was published (auth.PublishKey).
func NewSigner(key *ecdsa.PrivateKey, kid string, ttl time.Duration) *Signer {
	return &Signer{kid: kid, key: key, ttl: ttl}
}

// AccessToken is the accessToken object of the verify and refresh
// answers: the token and, for clients that do not decode JWTs, its
// decoded header and payload.
type AccessToken struct {
	Data  TokenData `json:"data"`
	Token string    `json:"token"`
}

// TokenData is the decoded header and payload of an access token.
type TokenData struct {
	Header  map[string]any `json:"header"`
	Payload *auth.Claims   `json:"payload"`
}

// Issue signs an access token for user within session sid.
func (s *Signer) Issue(user auth.TokenUser, sid int64, now time.Time) (AccessToken, error) {
	claims := &auth.Claims{
		User: user, AccessType: auth.AccessType, SessionID: sid,
		RegisteredClaims: jwt.RegisteredClaims{
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(s.ttl)),
		},
	}
	t := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	t.Header["kid"] = s.kid
	signed, err := t.SignedString(s.key)
	if err != nil {
		return AccessToken{}, fmt.Errorf("sign access token: %w", err)
	}
	return AccessToken{Data: TokenData{Header: t.Header, Payload: claims}, Token: signed}, nil
}

// Refresh credentials are "rt1." followed by 32 random bytes in base64url.
// Only their SHA-256 is stored.
const refreshPrefix = "rt1."

func newRefreshToken() (token string, hash []byte, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, fmt.Errorf("random refresh credential: %w", err)
	}
	token = refreshPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(token))
	return token, sum[:], nil
}

var errMalformedRefresh = errors.New("malformed refresh credential")

// decodeRefreshToken checks the form of a credential and returns its hash.
func decodeRefreshToken(token string) ([]byte, error) {
	rest, ok := strings.CutPrefix(token, refreshPrefix)
	if !ok || len(rest) != 43 {
		return nil, errMalformedRefresh
	}
	if b, err := base64.RawURLEncoding.DecodeString(rest); err != nil || len(b) != 32 {
		return nil, errMalformedRefresh
	}
	sum := sha256.Sum256([]byte(token))
	return sum[:], nil
}
