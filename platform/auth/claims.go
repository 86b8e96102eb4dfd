package auth

import (
	"github.com/golang-jwt/jwt/v5"
)

// RoleUser is the role of every logged-in user.
const RoleUser = "ROLE_USER"

// AccessType is the access_type claim of access tokens; other credentials
// signed with the same keys can never pass as access tokens.
const AccessType = "access_token"

// TokenUser is the user claim of an access token.
type TokenUser struct {
	UserID  int64    `json:"userId"`
	Address string   `json:"address"`
	Roles   []string `json:"roles"`
}

// Claims is the payload of an access token: the interface's user,
// access_type, iat and exp, and sid, the session the token was issued
// for (logout revokes it).
type Claims struct {
	User       TokenUser `json:"user"`
	AccessType string    `json:"access_type"`
	SessionID  int64     `json:"sid,omitempty"`
	jwt.RegisteredClaims
}

// Validate is called by the parser after the time claims have passed.
func (c *Claims) Validate() error {
	if c.AccessType != AccessType {
		return errWrongType
	}
	if c.User.UserID <= 0 {
		return errNoUser
	}
	return nil
}
