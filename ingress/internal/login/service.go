// Package login is the identity side of ingress: the EIP-712 login
// challenge and its verification, sessions with rotating refresh
// credentials, logout, and the user's own profile changes.
package login

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/ingress/internal/ratelimit"
	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/users"
)

// CookieName is the refresh cookie of the interface.
const CookieName = "x_auth_refresh_token"

// Config is the login configuration.
type Config struct {
	Product        string         // typed-data domain name is "<Product> Login"
	ChainID        int64          // typed-data domain chainId
	Host           string         // the typed data's message.domain; "" = the request's Host
	NonceTTL       time.Duration  // how long a login challenge stays valid (5m)
	SessionTTL     time.Duration  // how long a session lasts from login (7 days)
	RatePerAddress ratelimit.Rate // proven logins (verifies whose signature holds) per address
	RatePerIP      ratelimit.Rate // login, verify and refresh attempts per client IP
	ClientIPHeader string         // header a trusted gateway puts the client IP in; "" = the peer address
}

// Service serves the login, session and profile mutations.
type Service struct {
	cfg    Config
	db     store
	signer *Signer
	byAddr *ratelimit.Limiter
	byIP   *ratelimit.Limiter
	now    func() time.Time
}

// New returns the service; signer issues the access tokens.
func New(cfg Config, pool *pgxpool.Pool, signer *Signer) *Service {
	now := time.Now
	return &Service{
		cfg: cfg, db: store{pool: pool}, signer: signer, now: now,
		byAddr: ratelimit.New(cfg.RatePerAddress, 100_000, now),
		byIP:   ratelimit.New(cfg.RatePerIP, 100_000, now),
	}
}

// DeleteExpiredNonces removes the login challenges that expired before
// now, used or not; run it with sweep.Every.
func (s *Service) DeleteExpiredNonces(ctx context.Context, now time.Time) (int64, error) {
	return s.db.deleteExpiredNonces(ctx, now)
}

// Register mounts the routes under both presentations of the interface
// (/api/v1 and /v1). bearer protects the private ones; needsDB answers
// 503 while Postgres is down.
func (s *Service) Register(r gin.IRouter, bearer, needsDB gin.HandlerFunc) {
	for _, prefix := range []string{"/api/v1", "/v1"} {
		g := r.Group(prefix+"/user", needsDB)
		g.POST("/login", s.login)
		g.POST("/login/verify", s.verify(prefix))
		g.POST("/login/refresh", s.refresh(prefix))
		g.POST("/logout", bearer, s.logout(prefix))
	}
	g := r.Group("/api/v1/user", needsDB, bearer)
	g.POST("/update", s.update)
	g.POST("/payoutAddress", s.payoutAddress)
	g.POST("/collateralPerSlot", s.collateralPerSlot)
}

func (s *Service) params(c *gin.Context) (url.Values, error) {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, httpx.Invalid("request body exceeds the limit of %d bytes", tooBig.Limit)
		}
		return nil, fmt.Errorf("read body: %w", err)
	}
	return Params(c.Request.URL.RawQuery, c.GetHeader("Content-Type"), body)
}

// clientIP is the peer address, or the header a trusted gateway sets.
func (s *Service) clientIP(c *gin.Context) string {
	return ratelimit.ClientIP(c.Request, s.cfg.ClientIPHeader)
}

// clientKey is what the per-client limit counts the request against.
func (s *Service) clientKey(c *gin.Context) string {
	return ratelimit.ClientKey(c.Request, s.cfg.ClientIPHeader)
}

// limit takes a token from l's bucket of key, or refuses when it is empty.
func limit(l *ratelimit.Limiter, key, what string) error {
	ok, wait := l.Allow(key)
	return tooMany(ok, wait, what)
}

// tooMany is the 429 of an empty bucket (wait until its next token), or
// nil when ok.
func tooMany(ok bool, wait time.Duration, what string) error {
	if ok {
		return nil
	}
	e := httpx.TooMany(httpx.ReasonRateLimit, "too many login attempts from this "+what+"; retry later")
	e.RetryAfter = int(math.Ceil(wait.Seconds()))
	return e
}

func (s *Service) login(c *gin.Context) {
	v, err := s.params(c)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	in, err := ParseLogin(v)
	if err == nil {
		err = limit(s.byIP, s.clientKey(c), "client address")
	}
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	host := s.cfg.Host
	if host == "" {
		host = c.Request.Host
	}
	for range 8 {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			httpx.Fail(c, fmt.Errorf("random nonce: %w", err))
			return
		}
		nonce := "0x" + hex.EncodeToString(b[:])
		doc := jsonString(newTypedData(s.cfg.Product, s.cfg.ChainID, nonce, host))
		taken, err := s.db.issueNonce(c, nonce, in.Address, in.Name, doc, s.cfg.NonceTTL)
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		if !taken {
			httpx.OK(c, gin.H{"status": "ok", "eip712Message": doc, "nonceHash": nonce})
			return
		}
	}
	httpx.Fail(c, errors.New("no free login nonce after 8 draws"))
}

// limitVerify refuses a verify when the client IP's bucket is empty or
// the address has used up its logins. It takes no token from the address:
// only a verify whose signature holds takes one, so no one can
// spend an address's logins without its key.
func (s *Service) limitVerify(c *gin.Context, addr string) error {
	if err := limit(s.byIP, s.clientKey(c), "client address"); err != nil {
		return err
	}
	ok, wait := s.byAddr.Has(addr)
	return tooMany(ok, wait, "wallet address")
}

// verify checks the signature of a login challenge and starts a session.
func (s *Service) verify(prefix string) gin.HandlerFunc {
	return func(c *gin.Context) {
		v, err := s.params(c)
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		in, err := ParseVerify(v, c.GetHeader("User-Agent"))
		if err == nil {
			err = s.limitVerify(c, in.Address)
		}
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		userID, sid, refresh, err := s.startSession(c, in, s.clientIP(c))
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		s.byAddr.Allow(in.Address) // a proven login: the address's own allowance
		s.answerWithToken(c, prefix, userID, sid, refresh, int(s.cfg.SessionTTL.Seconds()), false)
	}
}

// startSession consumes the nonce and checks the signature in one
// transaction. A wrong signature still uses the nonce up (one attempt per
// challenge), so the transaction commits before the refusal.
func (s *Service) startSession(ctx context.Context, in VerifyInput, ip string) (userID, sid int64, refresh string, err error) {
	var refusal error
	err = pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		raw, name, err := consumeNonce(ctx, tx, in.Nonce, in.Address)
		if err != nil {
			return err
		}
		doc, err := parseTypedData(raw)
		if err != nil {
			return err
		}
		digest, err := doc.hash()
		if err != nil {
			return err
		}
		signer, err := recoverSigner(digest, in.Signature)
		if err != nil || !strings.EqualFold(signer.Hex(), in.Address) {
			refusal = httpx.Unauthorized("signature was not made by " + in.Address + " over the typed data of nonceHash " + in.Nonce)
			return nil
		}
		if userID, err = ensureUser(ctx, tx, in.Address, name); err != nil {
			return err
		}
		sid, refresh, err = createSession(ctx, tx, userID, in.UserAgent, ip, s.cfg.SessionTTL)
		return err
	})
	switch {
	case errors.Is(err, errNonce):
		return 0, 0, "", httpx.Unauthorized(err.Error())
	case err != nil:
		return 0, 0, "", err
	case refusal != nil:
		return 0, 0, "", refusal
	}
	return userID, sid, refresh, nil
}

func (s *Service) refresh(prefix string) gin.HandlerFunc {
	return func(c *gin.Context) {
		v, err := s.params(c)
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		cookie, _ := c.Cookie(CookieName)
		token, ua, err := ParseRefresh(v, cookie, c.GetHeader("User-Agent"))
		if err == nil {
			err = limit(s.byIP, s.clientKey(c), "client address")
		}
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		hash, _ := decodeRefreshToken(token) // ParseRefresh checked its form
		rot, err := s.db.rotate(c, hash, ua)
		switch {
		case errors.Is(err, errSession), errors.Is(err, errReused), errors.Is(err, errAgentChanged):
			httpx.Fail(c, httpx.Unauthorized(err.Error()))
			return
		case err != nil:
			httpx.Fail(c, err)
			return
		}
		s.answerWithToken(c, prefix, rot.userID, rot.sessionID, rot.token, rot.left, true)
	}
}

// answerWithToken answers verify and refresh: the user, a new access
// token and the refresh cookie, which lasts the maxAge seconds the
// session has left (rotation does not extend a session).
func (s *Service) answerWithToken(c *gin.Context, prefix string, userID, sid int64, refresh string, maxAge int, cashTokens bool) {
	u, err := users.Get(c, s.db.pool, userID)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	if cashTokens {
		for i := range u.Accounts {
			u.Accounts[i].CashTokenIDs = []int64{ethTokenID}
		}
	}
	tok, err := s.signer.Issue(auth.TokenUser{UserID: u.UserID, Address: u.Address, Roles: []string{auth.RoleUser}}, sid, s.now())
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	s.setCookie(c, prefix, refresh, maxAge)
	httpx.OK(c, gin.H{"user": u, "accessToken": tok})
}

// setCookie sets (maxAge > 0) or clears (maxAge < 0) the refresh cookie.
// It is scoped to the login paths, so it travels only to verify and
// refresh, and is Secure whenever the client reached us over TLS.
func (s *Service) setCookie(c *gin.Context, prefix, value string, maxAge int) {
	http.SetCookie(c.Writer, &http.Cookie{
		Name: CookieName, Value: value, Path: prefix + "/user/login", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: c.Request.TLS != nil || strings.EqualFold(c.GetHeader("X-Forwarded-Proto"), "https"),
	})
}

func (s *Service) logout(prefix string) gin.HandlerFunc {
	return func(c *gin.Context) {
		claims := auth.FromContext(c)
		if err := s.db.revoke(c, claims.User.UserID, claims.SessionID, "logout"); err != nil {
			httpx.Fail(c, err)
			return
		}
		s.setCookie(c, prefix, "", -1)
		c.Data(http.StatusOK, "application/json; charset=utf-8", []byte("{}"))
	}
}

func (s *Service) update(c *gin.Context) {
	v, err := s.params(c)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	name, err := ParseDisplayName(v.Get("displayName"))
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	userID := auth.FromContext(c).User.UserID
	if err := s.db.updateUser(c, userID, `display_name = $2`, name); err != nil {
		httpx.Fail(c, err)
		return
	}
	u, err := users.Get(c, s.db.pool, userID)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.OK(c, gin.H{"user": u})
}

func (s *Service) payoutAddress(c *gin.Context) {
	v, err := s.params(c)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	addr, err := ParsePayoutAddress(v.Get("payoutAddress"))
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	if err := s.db.updateUser(c, auth.FromContext(c).User.UserID, `payout_address = $2`, addr); err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.OK(c, gin.H{})
}

// ParsePayoutAddress accepts a 0x hex address; a mixed-case one must carry
// a valid EIP-55 checksum, since a typo there would send funds astray. It
// returns the checksummed form.
func ParsePayoutAddress(s string) (string, error) {
	s = strings.TrimSpace(s)
	if _, err := parseAddress("payoutAddress", s); err != nil {
		return "", err
	}
	hexPart := s[2:]
	mixed := strings.ToLower(hexPart) != hexPart && strings.ToUpper(hexPart) != hexPart
	sum := common.HexToAddress(s).Hex()
	if mixed && sum != "0x"+hexPart {
		return "", httpx.Invalid("payoutAddress %s has an invalid EIP-55 checksum", truncate(s))
	}
	return sum, nil
}

func (s *Service) collateralPerSlot(c *gin.Context) {
	v, err := s.params(c)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	d, err := ParseCollateralPerSlot(v.Get("collateralPerSlot"))
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	if err := s.db.updateUser(c, auth.FromContext(c).User.UserID, `collateral_per_slot = $2::numeric`, d); err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.OK(c, gin.H{})
}

// Collateral-per-slot codes (docs/codes.md "Application codes").
const (
	CodeCollateralNegative = 2001
	CodeCollateralTooLarge = 2002
)

// ParseCollateralPerSlot accepts a plain decimal from 0 to 100 inclusive
// and returns it in canonical form.
func ParseCollateralPerSlot(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", httpx.Invalid("collateralPerSlot is required")
	}
	if len(s) > 40 || !isPlainDecimal(s) {
		return "", httpx.Invalid("collateralPerSlot must be a decimal number such as 12.5, got %q", truncate(s))
	}
	if s[0] == '-' && strings.Trim(s, "-0.") != "" {
		return "", httpx.Refused(CodeCollateralNegative, "COLLATERAL_PER_SLOT_NEGATIVE", "collateralPerSlot %s is below 0", s)
	}
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	intPart, _, _ := strings.Cut(s, ".")
	intPart = strings.TrimLeft(intPart, "0")
	if n, _ := strconv.Atoi(intPart); len(intPart) > 3 || n > 100 || (n == 100 && strings.Trim(s[strings.Index(s+".", "."):], ".0") != "") {
		return "", httpx.Refused(CodeCollateralTooLarge, "COLLATERAL_PER_SLOT_TOO_LARGE", "collateralPerSlot %s is above 100", s)
	}
	return s, nil
}

// isPlainDecimal accepts [+-]digits[.digits], no exponent.
func isPlainDecimal(s string) bool {
	if s[0] == '-' || s[0] == '+' {
		s = s[1:]
	}
	intPart, frac, hasDot := strings.Cut(s, ".")
	if intPart == "" || (hasDot && frac == "") {
		return false
	}
	for _, part := range []string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return false
			}
		}
	}
	return true
}
