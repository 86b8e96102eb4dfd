package queryapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// GET /api/v1/validator/list answers the caller's own registrations,
// oldest first, with the documented fields; another user's never show,
// and without a bearer token the answer is 401 code 1.
func TestValidatorListIsTheCallersOwn(t *testing.T) {
	s, pool := newService(t, "dev", "0x00000000000000000000000000000000000000ab", nil)
	is := newIssuer(t, s, pool)
	alice := is.user(t, "0x00000000000000000000000000000000000000a1")
	bob := is.user(t, "0x00000000000000000000000000000000000000b0")
	pubkey := func(i int) string { return "0x" + strings.Repeat(fmt.Sprintf("%02x", i), 48) }
	for i, v := range []struct {
		user int64
		at   string
		typ  int
	}{{alice.id, "2026-01-02T00:00:00Z", 1}, {bob.id, "2026-01-01T00:00:00Z", 0}, {alice.id, "2026-01-01T00:00:00Z", 0}} {
		if _, err := pool.Exec(t.Context(), `INSERT INTO validators (pubkey, user_id, validator_index, validator_type, signature, registered_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, pubkey(i+1), v.user, 100+i, v.typ, "0x"+strings.Repeat("ab", 96), v.at); err != nil {
			t.Fatal(err)
		}
	}
	h := s.Handler()
	r := getAs(t, h, alice.token, "/api/v1/validator/list")
	var d struct {
		Validators []struct {
			Pubkey         string `json:"pubkey"`
			ValidatorIndex int64  `json:"validatorIndex"`
			ValidatorType  int    `json:"validatorType"`
			RegisterDate   int64  `json:"registerDate"`
		} `json:"validators"`
	}
	if err := json.Unmarshal(r.Body.Data, &d); err != nil || r.Status != 200 || !r.Body.Success {
		t.Fatalf("list: %d %s %v", r.Status, r.Body.Data, err)
	}
	if len(d.Validators) != 2 || d.Validators[0].Pubkey != pubkey(3) || d.Validators[1].Pubkey != pubkey(1) ||
		d.Validators[0].ValidatorIndex != 102 || d.Validators[1].ValidatorType != 1 || d.Validators[0].RegisterDate != 1767225600000 {
		t.Fatalf("alice's validators: %+v", d.Validators)
	}
	if r := getAs(t, h, "", "/api/v1/validator/list"); r.Status != 401 || r.Body.Code != 1 {
		t.Fatalf("without a token: %d %+v", r.Status, r.Body)
	}
}
