package orderflow

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"
)

// FuzzParseCancel: an accepted eth_cancelBundle parameter names a UUID.
func FuzzParseCancel(f *testing.F) {
	f.Add([]byte(`{"replacementUuid":"0b4e0b2c-6f5a-4b6c-9d8e-1f2a3b4c5d6e"}`))
	f.Add([]byte(`{"replacementUuid":"x","other":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, param []byte) {
		uuid, err := ParseCancel(json.RawMessage(param))
		if err == nil && !uuidPattern.MatchString(uuid) {
			t.Fatalf("accepted %q", uuid)
		}
		if err != nil {
			if _, ok := err.(*ParamError); !ok {
				t.Fatalf("error %T %v", err, err)
			}
		}
	})
}

// FuzzRecoverSigner: a signature of the verify body recovers an address
// or fails, never panics; only a 65-byte signature with recovery id 0, 1,
// 27 or 28 recovers; the real signature of a digest recovers its signer,
// with v as 0/1 and as 27/28 alike.
func FuzzRecoverSigner(f *testing.F) {
	signer := crypto.PubkeyToAddress(testKey.PublicKey)
	digest := crypto.Keccak256([]byte("challenge"))
	sig, err := crypto.Sign(digest, testKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(digest, sig)
	f.Add(digest, append(bytes.Clone(sig[:64]), sig[64]+27))
	f.Add(digest, append(bytes.Clone(sig[:64]), 29))
	f.Add([]byte{1}, []byte{})
	f.Fuzz(func(t *testing.T, digest, sig []byte) {
		got, err := RecoverSigner(digest, sig)
		if err == nil && (len(sig) != 65 || sig[64]%27 > 1 || sig[64] > 28) {
			t.Fatalf("signature %x recovered %s", sig, got)
		}
		if len(digest) != 32 {
			return
		}
		signed, err := crypto.Sign(digest, testKey)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []byte{signed[64], signed[64] + 27} {
			s := append(bytes.Clone(signed[:64]), v)
			if who, err := RecoverSigner(digest, s); err != nil || who != signer {
				t.Fatalf("the signer's signature with v %d of %x recovered %s, %v; want %s", v, digest, who, err, signer)
			}
		}
		if len(sig) == 65 && bytes.Equal(sig[:64], signed[:64]) && sig[64]%27 == signed[64] && sig[64] <= 28 && got != signer {
			t.Fatalf("the signer's signature %x recovered %s, want %s", sig, got, signer)
		}
	})
}

// FuzzWellFormedKey: only the prefix and 64 hex digits pass.
func FuzzWellFormedKey(f *testing.F) {
	k, _ := NewKey()
	f.Add(k)
	f.Add("ofk_")
	f.Add(KeyPrefix + "zz")
	f.Fuzz(func(t *testing.T, key string) {
		if WellFormedKey(key) && (len(key) != 68 || key[:4] != KeyPrefix) {
			t.Fatalf("accepted %q", key)
		}
	})
}
