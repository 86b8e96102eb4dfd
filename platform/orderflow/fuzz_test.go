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
// or fails, never panics; the real signature recovers its signer.
func FuzzRecoverSigner(f *testing.F) {
	digest := crypto.Keccak256([]byte("challenge"))
	sig, _ := crypto.Sign(digest, testKey)
	f.Add(digest, sig)
	f.Add(digest, append(bytes.Clone(sig[:64]), 28))
	f.Add([]byte{1}, []byte{})
	f.Fuzz(func(t *testing.T, digest, sig []byte) {
		_, _ = RecoverSigner(digest, sig)
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
