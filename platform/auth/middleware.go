package auth

import (
	"errors"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"

	"blockspace.exchange/platform/httpx"
)

const claimsKey = "auth.claims"

// Bearer protects the routes behind it: a request without a valid
// "Authorization: Bearer <access token>" is answered 401 with code 1 and
// WWW-Authenticate: Bearer; otherwise the claims are available to the
// handlers through FromContext.
func Bearer(v *Verifier) gin.HandlerFunc {
	return func(c *gin.Context) {
		token, ok := BearerToken(c.GetHeader("Authorization"))
		if !ok {
			httpx.Fail(c, httpx.Unauthorized("header Authorization: Bearer <access token> is required"))
			return
		}
		claims, err := v.Verify(c, token)
		if err != nil {
			httpx.Fail(c, httpx.Unauthorized(describe(err)))
			return
		}
		c.Set(claimsKey, claims)
		c.Next()
	}
}

// BearerToken extracts the token of an Authorization header value.
func BearerToken(header string) (string, bool) {
	const scheme = "bearer "
	if len(header) <= len(scheme) || !strings.EqualFold(header[:len(scheme)], scheme) {
		return "", false
	}
	token := strings.TrimSpace(header[len(scheme):])
	return token, token != ""
}

// FromContext returns the claims Bearer verified. Handlers behind Bearer
// can rely on it; elsewhere it returns nil.
func FromContext(c *gin.Context) *Claims {
	v, ok := c.Get(claimsKey)
	if !ok {
		return nil
	}
	claims, _ := v.(*Claims)
	return claims
}

// describe tells the client what was wrong with its token without echoing
// any part of it.
func describe(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return "access token has expired; refresh the session"
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued), errors.Is(err, jwt.ErrTokenNotValidYet):
		return "access token is not valid yet"
	case errors.Is(err, ErrRevoked):
		return "the login session of this access token was revoked; log in again"
	case errors.Is(err, ErrUnknownKey):
		return "access token is signed with an unknown key"
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "access token is malformed"
	default:
		return "access token is invalid"
	}
}
