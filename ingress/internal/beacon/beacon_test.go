package beacon

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const (
	pkA = "0x93247f2209abcacf57b75a51dafae777f9dd38bc7053d1af526f220a7489a6d3a2753e5f3e8b1cfe39b56f43611df74a"
	pkB = "0xa572cbea904d67468808c8eb50a9450c9721db309128012543902d0ac358a62ae28f75bb8f1c7c42c39a8c5529bf0f4e"
)

// fakeBeacon answers like a beacon node (Lighthouse, Prysm, Teku): numbers
// as decimal strings, 404 with a JSON error for an unknown validator, 400
// for an epoch beyond the lookahead.
func fakeBeacon(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /eth/v1/validator/duties/proposer/{epoch}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.PathValue("epoch") {
		case "100":
			_, _ = w.Write([]byte(`{"dependent_root":"0x0000000000000000000000000000000000000000000000000000000000000000","execution_optimistic":false,"data":[` +
				`{"pubkey":"` + pkA + `","validator_index":"1","slot":"3200"},` +
				`{"pubkey":"0x` + strings.ToUpper(pkB[2:]) + `","validator_index":"2","slot":"3201"}]}`))
		case "101":
			_, _ = w.Write([]byte(`{"data":[{"pubkey":"0x12","validator_index":"x","slot":"3232"}]}`))
		default:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"code":400,"message":"Invalid epoch: requested epoch is too far ahead"}`))
		}
	})
	mux.HandleFunc("GET /eth/v1/beacon/states/head/validators/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.PathValue("id") != pkA {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"code":404,"message":"Validator not found"}`))
			return
		}
		_, _ = w.Write([]byte(`{"execution_optimistic":false,"finalized":false,"data":{"index":"1","balance":"32000000000","status":"active_ongoing",` +
			`"validator":{"pubkey":"` + pkA + `","withdrawal_credentials":"0x00","effective_balance":"32000000000","slashed":false}}}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestProposerDuties(t *testing.T) {
	srv := fakeBeacon(t)
	c, err := NewClient(srv.URL+"/", 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	duties, err := c.ProposerDuties(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []Duty{{Pubkey: pkA, ValidatorIndex: 1, Slot: 3200}, {Pubkey: pkB, ValidatorIndex: 2, Slot: 3201}}
	if len(duties) != 2 || duties[0] != want[0] || duties[1] != want[1] {
		t.Fatalf("duties %+v, want %+v", duties, want)
	}
	tests := []struct {
		name  string
		epoch uint64
		unav  bool
	}{
		{"malformed duty", 101, false},
		{"beyond lookahead", 500, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.ProposerDuties(ctx, tc.epoch)
			if err == nil || errors.Is(err, ErrUnavailable) != tc.unav {
				t.Fatalf("err %v, want unavailable=%v", err, tc.unav)
			}
		})
	}
}

func TestValidator(t *testing.T) {
	c, err := NewClient(fakeBeacon(t).URL, 0)
	if err != nil {
		t.Fatal(err)
	}
	v, ok, err := c.Validator(context.Background(), pkA)
	if err != nil || !ok || v.Index != 1 || v.Status != "active_ongoing" {
		t.Fatalf("known validator: %+v %v %v", v, ok, err)
	}
	if _, ok, err := c.Validator(context.Background(), pkB); err != nil || ok {
		t.Fatalf("unknown validator: ok %v, err %v", ok, err)
	}
}

func TestBeaconDown(t *testing.T) {
	srv := fakeBeacon(t)
	c, _ := NewClient(srv.URL, 0)
	srv.Close()
	if _, err := c.ProposerDuties(context.Background(), 100); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err %v, want ErrUnavailable", err)
	}
}

func TestNewClientRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "localhost:5052", "ftp://x", "http://"} {
		if _, err := NewClient(u, 0); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
}

func TestNormalizePubkey(t *testing.T) {
	for in, ok := range map[string]bool{pkA: true, strings.ToUpper(pkA[:2]) + pkA[2:]: true, pkA[2:]: false, pkA + "00": false, pkA[:96] + "zz": false} {
		if _, err := NormalizePubkey(in); (err == nil) != ok {
			t.Errorf("%q: err %v", in, err)
		}
	}
}
