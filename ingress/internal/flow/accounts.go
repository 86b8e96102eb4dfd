package flow

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"blockspace.exchange/ingress/internal/ratelimit"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/jsonrpc"
	of "blockspace.exchange/platform/orderflow"
)

// AccountsConfig configures the account endpoints.
type AccountsConfig struct {
	Product string // names the EIP-712 domain "<Product> Orderflow"
	ChainID int64  // typed-data domain chainId
	// ChallengeRate limits challenges per client IP; each one is a row
	// until it expires.
	ChallengeRate  ratelimit.Rate
	ClientIPHeader string // header a trusted gateway puts the client IP in; "" = the peer address
	// Metrics counts the challenges refused over ChallengeRate
	// (http_refusals_total); nil counts nothing.
	Metrics *httpx.Metrics
}

// Accounts serves {orderflow_url}/v1/auth/*: challenge, verify, account,
// revoke, and refund-read subaccounts. Bodies use the REST envelope.
type Accounts struct {
	cfg   AccountsConfig
	keys  *of.Keys
	chall *of.Challenges
	byIP  *ratelimit.Limiter
	log   *slog.Logger
	now   func() time.Time
}

// NewAccounts returns the account endpoints.
func NewAccounts(cfg AccountsConfig, keys *of.Keys, chall *of.Challenges, log *slog.Logger) *Accounts {
	return &Accounts{cfg: cfg, keys: keys, chall: chall, log: log, now: time.Now,
		byIP: ratelimit.New(cfg.ChallengeRate, 100_000, time.Now)}
}

// Handler routes the account paths.
func (a *Accounts) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/auth/challenge", a.only(http.MethodGet, a.challenge))
	mux.HandleFunc("/v1/auth/verify", a.only(http.MethodPost, a.verify))
	mux.HandleFunc("/v1/auth/account", a.only(http.MethodGet, a.bearer(a.account)))
	mux.HandleFunc("/v1/auth/api-keys/revoke", a.only(http.MethodPost, a.bearer(a.revoke)))
	mux.HandleFunc("/v1/auth/refund-readers", a.only(http.MethodPost, a.bearer(a.addReader)))
	mux.HandleFunc("/v1/auth/refund-readers/remove", a.only(http.MethodPost, a.bearer(a.removeReader)))
	mux.HandleFunc("/v1/auth/refund-partners/accept", a.only(http.MethodPost, a.bearer(a.acceptPartner)))
	mux.HandleFunc("/v1/auth/refund-partners/remove", a.only(http.MethodPost, a.bearer(a.leavePartner)))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, 1001, "error.notFound", "no such orderflow endpoint: "+r.URL.Path)
	})
	return jsonrpc.WithRequestID(mux)
}

func (a *Accounts) only(method string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			fail(w, http.StatusBadRequest, 1001, "error.method", r.Method+" is not supported here; use "+method)
			return
		}
		h(w, r)
	}
}

type identityHandler func(w http.ResponseWriter, r *http.Request, id of.Identity, key string)

func (a *Accounts) bearer(h identityHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			w.Header().Set("WWW-Authenticate", "Bearer")
			fail(w, http.StatusUnauthorized, 1, "error.auth.required", "send the API key as Authorization: Bearer <API_KEY>")
			return
		}
		id, err := a.keys.Lookup(r.Context(), strings.TrimSpace(key))
		if err != nil {
			if errors.Is(err, of.ErrUnknownKey) {
				w.Header().Set("WWW-Authenticate", "Bearer")
				fail(w, http.StatusUnauthorized, 1, "error.auth.invalidKey", "unknown or revoked API key")
				return
			}
			a.internal(w, err)
			return
		}
		h(w, r, id, strings.TrimSpace(key))
	}
}

// ChallengeResponse is the data of GET /v1/auth/challenge.
type ChallengeResponse struct {
	Address   string       `json:"address"`
	Nonce     string       `json:"nonce"`
	ExpiresAt int64        `json:"expiresAt"`
	TypedData of.Challenge `json:"typedData"`
}

// challenge issues a challenge for an address: limited per client IP, and
// the store keeps only an address's newest few (of.MaxChallengesPerAddress).
func (a *Accounts) challenge(w http.ResponseWriter, r *http.Request) {
	addr, ok := address(r.URL.Query().Get("address"))
	if !ok {
		fail(w, http.StatusBadRequest, 1001, "error.validation", "address must be a 0x account address")
		return
	}
	if ok, wait := a.byIP.Allow(ratelimit.ClientKey(r, a.cfg.ClientIPHeader)); !ok {
		e := httpx.TooMany(httpx.ReasonRateLimit, "too many challenges from this client address; retry later")
		a.cfg.Metrics.Refused(e)
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		fail(w, e.Status, e.Code, e.Key, e.Message)
		return
	}
	expires := a.now().Add(of.ChallengeTTL).Truncate(time.Millisecond)
	c, err := of.NewChallenge(a.cfg.Product, a.cfg.ChainID, addr, expires)
	if err == nil {
		err = a.chall.Save(r.Context(), c, expires)
	}
	if err != nil {
		a.internal(w, err)
		return
	}
	ok200(w, ChallengeResponse{Address: addr, Nonce: c.Message.Nonce, ExpiresAt: expires.UnixMilli(), TypedData: c})
}

// VerifyRequest is the body of POST /v1/auth/verify.
type VerifyRequest struct {
	Address   string `json:"address"`
	Nonce     string `json:"nonce"`
	Signature string `json:"signature"`
}

// parse checks the request: a 0x account address (returned in lower
// case), a nonce as the challenge gives it (16 bytes of 0x hex), and a 0x
// hex signature (returned as bytes).
func (req VerifyRequest) parse() (string, []byte, bool) {
	addr, ok := address(req.Address)
	sig, err := of.DecodeHex(req.Signature)
	nonce, nerr := of.DecodeHex(req.Nonce)
	if !ok || err != nil || nerr != nil || len(nonce) != 16 {
		return "", nil, false
	}
	return addr, sig, true
}

// VerifyResponse is its data: the key, shown this once.
type VerifyResponse struct {
	APIKey  string          `json:"apiKey"`
	Account AccountResponse `json:"account"`
}

// AccountResponse is the data of GET /v1/auth/account.
type AccountResponse struct {
	Address     string   `json:"address"`
	Roles       []string `json:"roles"`
	Partners    []string `json:"refundPartners"`
	KeyID       string   `json:"keyId"`
	KeyIssuedAt int64    `json:"keyIssuedAt"`
}

func accountOf(id of.Identity) AccountResponse {
	partners := id.Partners
	if partners == nil {
		partners = []string{}
	}
	return AccountResponse{Address: id.Address, Roles: id.Roles, Partners: partners,
		KeyID: id.KeyHash[:16], KeyIssuedAt: id.IssuedAt.UnixMilli()}
}

func (a *Accounts) verify(w http.ResponseWriter, r *http.Request) {
	var req VerifyRequest
	if !readBody(w, r, &req) {
		return
	}
	addr, sig, ok := req.parse()
	if !ok {
		fail(w, http.StatusBadRequest, 1001, "error.validation", "address, nonce (the challenge's, 16 bytes of 0x hex) and signature (0x hex) are required")
		return
	}
	expires, err := a.chall.Use(r.Context(), req.Nonce, addr, a.now())
	if errors.Is(err, of.ErrChallenge) {
		fail(w, http.StatusUnauthorized, 1, "error.auth.challenge", err.Error())
		return
	} else if err != nil {
		a.internal(w, err)
		return
	}
	digest, err := of.ChallengeFor(a.cfg.Product, a.cfg.ChainID, addr, req.Nonce, expires).Digest()
	if err != nil {
		a.internal(w, err)
		return
	}
	signer, err := of.RecoverSigner(digest, sig)
	if err != nil || of.LowerAddress(signer) != addr {
		fail(w, http.StatusUnauthorized, 1, "error.auth.signature", "the signature is not the address's signature of the challenge")
		return
	}
	key, id, err := a.keys.Store().Issue(r.Context(), addr)
	if err != nil {
		a.internal(w, err)
		return
	}
	ok200(w, VerifyResponse{APIKey: key, Account: accountOf(id)})
}

func (a *Accounts) account(w http.ResponseWriter, _ *http.Request, id of.Identity, _ string) {
	ok200(w, accountOf(id))
}

func (a *Accounts) revoke(w http.ResponseWriter, r *http.Request, id of.Identity, key string) {
	var body struct{}
	if !readBody(w, r, &body) {
		return
	}
	if err := a.keys.Store().Revoke(r.Context(), id.KeyHash); err != nil {
		a.internal(w, err)
		return
	}
	a.keys.Forget(key)
	ok200(w, map[string]any{"revoked": true, "keyId": id.KeyHash[:16]})
}

// addReader offers the named account the reading of the caller's refunds;
// it reads them only once it accepts with its own key (acceptPartner).
func (a *Accounts) addReader(w http.ResponseWriter, r *http.Request, id of.Identity, _ string) {
	reader, ok := otherAccount(w, r, id)
	if !ok {
		return
	}
	if err := a.keys.Store().AddRefundReader(r.Context(), id.Address, reader); err != nil {
		a.internal(w, err)
		return
	}
	ok200(w, map[string]any{"partner": id.Address, "reader": reader, "accepted": false})
}

func (a *Accounts) removeReader(w http.ResponseWriter, r *http.Request, id of.Identity, _ string) {
	reader, ok := otherAccount(w, r, id)
	if !ok {
		return
	}
	a.remove(w, r, id.Address, reader)
}

// acceptPartner is the caller agreeing to read the refunds of the partner
// that offered it; accepted is false when there was no offer.
func (a *Accounts) acceptPartner(w http.ResponseWriter, r *http.Request, id of.Identity, _ string) {
	partner, ok := otherAccount(w, r, id)
	if !ok {
		return
	}
	accepted, err := a.keys.Store().AcceptRefundReader(r.Context(), partner, id.Address)
	if err != nil {
		a.internal(w, err)
		return
	}
	a.keys.ForgetAddress(id.Address)
	ok200(w, map[string]any{"partner": partner, "reader": id.Address, "accepted": accepted})
}

// leavePartner is the caller ending its reading of a partner's refunds.
func (a *Accounts) leavePartner(w http.ResponseWriter, r *http.Request, id of.Identity, _ string) {
	partner, ok := otherAccount(w, r, id)
	if !ok {
		return
	}
	a.remove(w, r, partner, id.Address)
}

func (a *Accounts) remove(w http.ResponseWriter, r *http.Request, partner, reader string) {
	removed, err := a.keys.Store().RemoveRefundReader(r.Context(), partner, reader)
	if err != nil {
		a.internal(w, err)
		return
	}
	a.keys.ForgetAddress(reader)
	ok200(w, map[string]any{"partner": partner, "reader": reader, "removed": removed})
}

// otherAccount reads {"address"} naming an account other than the caller.
func otherAccount(w http.ResponseWriter, r *http.Request, id of.Identity) (string, bool) {
	var body struct {
		Address string `json:"address"`
	}
	if !readBody(w, r, &body) {
		return "", false
	}
	other, ok := address(body.Address)
	if !ok || other == id.Address {
		fail(w, http.StatusBadRequest, 1001, "error.validation", "address must be another account's 0x address")
		return "", false
	}
	return other, true
}

func (a *Accounts) internal(w http.ResponseWriter, err error) {
	a.log.Error("orderflow accounts", "request_id", jsonrpc.RequestID(w), "error", err)
	fail(w, http.StatusInternalServerError, 9999, "error.unexpected", "unexpected error")
}

func address(s string) (string, bool) {
	if !strings.HasPrefix(s, "0x") || !common.IsHexAddress(s) {
		return "", false
	}
	return strings.ToLower(s), true
}

func readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		fail(w, http.StatusUnsupportedMediaType, 1001, "error.mediaType", "Content-Type must be application/json")
		return false
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, 16<<10))
	if err == nil {
		err = of.StrictJSON(b, v)
	}
	if err != nil {
		fail(w, http.StatusBadRequest, 1001, "error.validation", "body: "+err.Error())
		return false
	}
	return true
}

func ok200(w http.ResponseWriter, data any) {
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": data})
}

func fail(w http.ResponseWriter, status, code int, key, msg string) {
	writeJSON(w, status, map[string]any{"success": false, "code": code, "errorMsgKey": key, "message": msg, "data": map[string]any{}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
