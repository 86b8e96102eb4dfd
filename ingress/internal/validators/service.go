// Package validators registers the validators whose slots users sell:
// a user proves with a BLS signature that a validator key signs for the
// user's address (bls.go), the beacon chain confirms the validator exists,
// and the registration lands in Postgres, where the slot clock finds the
// seller of each slot (sellers.go).
package validators

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/ingress/internal/beacon"
	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/topics"
)

// Registration result codes (docs/api.md "Values and identifiers").
const (
	ResultOK                = 0
	ResultNotFound          = 1
	ResultInvalidSignature  = 2
	ResultAlreadyRegistered = 3
)

// MaxBatch bounds the validators of one request.
const MaxBatch = 100

// Beacon is what registration needs of the beacon chain.
type Beacon interface {
	Validator(ctx context.Context, pubkey string) (beacon.Validator, bool, error)
}

// Publisher sends committed outbox rows, leaving what Kafka does not take
// to the outbox relay; *outbox.Outbox is one.
type Publisher interface {
	Publish(ctx context.Context, ps []outbox.Pending)
}

// Service serves the validator mutations. Each registration change is
// stored with the outbox row of its record on the validators topic, and
// published after commit (the outbox relay delivers what a failed publish
// left behind).
type Service struct {
	chainID int64
	pool    *pgxpool.Pool
	beacon  Beacon
	out     Publisher
	log     *slog.Logger
	// caller returns the verified claims of the request (tests replace it).
	caller func(*gin.Context) *auth.Claims
}

// New returns the service for the environment's chain.
func New(chainID int64, pool *pgxpool.Pool, b Beacon, out Publisher, log *slog.Logger) *Service {
	return &Service{chainID: chainID, pool: pool, beacon: b, out: out, log: log, caller: auth.FromContext}
}

// Register mounts POST register, verify/batch and deregister behind the
// bearer check.
func (s *Service) Register(r gin.IRouter, bearer gin.HandlerFunc, needs ...gin.HandlerFunc) {
	g := r.Group("/api/v1/validator", append(needs, bearer)...)
	g.POST("/register", httpx.RequireJSON(), s.handle(true))
	g.POST("/verify/batch", httpx.RequireJSON(), s.handle(false))
	g.POST("/deregister", httpx.RequireJSON(), s.deregister)
}

// Item is one validator of a register or verify request.
type Item struct {
	Pubkey    string `json:"pubkey"`
	Signature string `json:"signature"`
	// ValidatorType is 0 for a normal validator, 1 for an SSV validator.
	ValidatorType int `json:"validatorType"`
}

// Result is the answer for one item.
type Result struct {
	Pubkey         string  `json:"pubkey"`
	Result         int     `json:"result"`
	Message        string  `json:"message"`
	ValidatorIndex *uint64 `json:"validatorIndex"`
}

type parsed struct {
	Item
	sig []byte
	key []byte
}

func (s *Service) handle(register bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		items, err := decodeItems(c)
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		claims := s.caller(c)
		addr, err := ParseAddress(claims.User.Address)
		if err != nil {
			httpx.Fail(c, fmt.Errorf("token address %q: %w", claims.User.Address, err))
			return
		}
		results := make([]Result, len(items))
		var stored []outbox.Pending
		for i, it := range items {
			var p *outbox.Pending
			if results[i], p, err = s.check(c, claims.User, addr, it, register); err != nil {
				s.out.Publish(c, stored)
				httpx.Fail(c, err)
				return
			}
			if p != nil {
				stored = append(stored, *p)
			}
		}
		s.out.Publish(c, stored)
		httpx.OK(c, gin.H{"results": results})
	}
}

// decodeItems accepts one object or an array of them; a malformed key or
// signature refuses the whole request with 400 naming the item.
func decodeItems(c *gin.Context) ([]parsed, error) {
	var raw []Item
	body, err := readBody(c)
	if err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '{' {
		var one Item
		if err := httpx.DecodeJSONBytes(body, &one); err != nil {
			return nil, err
		}
		raw = []Item{one}
	} else if err := httpx.DecodeJSONBytes(body, &raw); err != nil {
		return nil, err
	}
	if len(raw) == 0 || len(raw) > MaxBatch {
		return nil, httpx.Invalid("a request holds from 1 to %d validators, got %d", MaxBatch, len(raw))
	}
	out := make([]parsed, len(raw))
	for i, it := range raw {
		pk, err := beacon.NormalizePubkey(it.Pubkey)
		if err != nil {
			return nil, httpx.Invalid("validators[%d]: %v", i, err)
		}
		sig, err := decodeSignature(it.Signature)
		if err != nil {
			return nil, httpx.Invalid("validators[%d]: %v", i, err)
		}
		if it.ValidatorType != 0 && it.ValidatorType != 1 {
			return nil, httpx.Invalid("validators[%d]: validatorType must be 0 (normal) or 1 (SSV), got %d", i, it.ValidatorType)
		}
		key, _ := hex.DecodeString(pk[2:])
		it.Pubkey = pk
		out[i] = parsed{Item: it, sig: sig, key: key}
	}
	return out, nil
}

// check decides one item: signature first (local), then an existing
// registration, then the beacon chain; register also stores it.
// check verifies one item and, when registering, stores it; p is the
// outbox row of a stored registration.
func (s *Service) check(ctx context.Context, user auth.TokenUser, addr [20]byte, it parsed, register bool) (r Result, p *outbox.Pending, err error) {
	r = Result{Pubkey: it.Pubkey}
	if !verify(it.key, it.sig, Message(s.chainID, addr)) {
		r.Result, r.Message = ResultInvalidSignature, "signature does not verify for this key and the caller's address"
		return r, nil, nil
	}
	owner, err := ownerOf(ctx, s.pool, it.Pubkey)
	if err != nil {
		return r, nil, err
	}
	if owner != 0 {
		r.Result, r.Message = ResultAlreadyRegistered, "validator is already registered"
		return r, nil, nil
	}
	v, found, err := s.beacon.Validator(ctx, it.Pubkey)
	if err != nil {
		if errors.Is(err, beacon.ErrUnavailable) {
			return r, nil, fmt.Errorf("look up validator: %w: %v", httpx.ErrUnavailable, err)
		}
		return r, nil, fmt.Errorf("look up validator: %w", err)
	}
	if !found {
		r.Result, r.Message = ResultNotFound, "the beacon chain does not know this validator"
		return r, nil, nil
	}
	r.ValidatorIndex = &v.Index
	if !register {
		r.Message = "signature verifies; the validator can be registered"
		return r, nil, nil
	}
	reg := topics.ValidatorRegistered{Pubkey: it.Pubkey, UserID: user.UserID, Address: strings.ToLower(user.Address),
		ValidatorIndex: v.Index, ValidatorType: it.ValidatorType}
	stored, inserted, err := Insert(ctx, s.pool, reg, it.sig)
	if err != nil {
		return r, nil, err
	}
	if !inserted {
		r.Result, r.Message = ResultAlreadyRegistered, "validator is already registered"
		return r, nil, nil
	}
	r.Message = "registered"
	return r, &stored, nil
}

func (s *Service) deregister(c *gin.Context) {
	var req struct {
		Pubkeys []string `json:"pubkeys"`
	}
	if err := httpx.DecodeJSON(c, &req); err != nil {
		httpx.Fail(c, err)
		return
	}
	if len(req.Pubkeys) == 0 || len(req.Pubkeys) > MaxBatch {
		httpx.Fail(c, httpx.Invalid("pubkeys holds from 1 to %d keys, got %d", MaxBatch, len(req.Pubkeys)))
		return
	}
	keys := make([]string, len(req.Pubkeys))
	for i, k := range req.Pubkeys {
		pk, err := beacon.NormalizePubkey(k)
		if err != nil {
			httpx.Fail(c, httpx.Invalid("pubkeys[%d]: %v", i, err))
			return
		}
		keys[i] = pk
	}
	user := s.caller(c).User
	results := make([]Result, len(keys))
	var stored []outbox.Pending
	for i, k := range keys {
		p, removed, err := remove(c, s.pool, user.UserID, strings.ToLower(user.Address), k)
		if err != nil {
			s.out.Publish(c, stored)
			httpx.Fail(c, err)
			return
		}
		if removed {
			stored = append(stored, p)
		}
		results[i] = Result{Pubkey: k, Result: ResultOK, Message: "deregistered"}
		if !removed {
			results[i].Result, results[i].Message = ResultNotFound, "no validator with this key is registered to the caller"
		}
	}
	s.out.Publish(c, stored)
	httpx.OK(c, gin.H{"results": results})
}
