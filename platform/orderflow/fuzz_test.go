package orderflow

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/crypto/kzg4844"
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

// FuzzDecodeBlobTx builds signed blob transactions whose sidecars are
// well-formed RLP but carry fuzzed counts of blobs, commitments, proofs
// and blob hashes, in either sidecar version (or another), with the
// commitments and hashes possibly shifted against the blobs: shapes the
// byte-level FuzzDecodeTx almost never reaches. Decoding must refuse them
// with a TxError or accept only a sidecar that holds one commitment and
// the right proofs for each named blob, never panic.
func FuzzDecodeBlobTx(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint16(1), uint8(1), uint8(0), uint8(0), uint8(0))
	f.Add(uint8(2), uint8(2), uint16(2*kzg4844.CellProofsPerBlob), uint8(2), uint8(1), uint8(0), uint8(0))
	f.Add(uint8(2), uint8(1), uint16(2), uint8(1), uint8(0), uint8(0), uint8(0))
	f.Add(uint8(2), uint8(1), uint16(2*kzg4844.CellProofsPerBlob), uint8(1), uint8(1), uint8(0), uint8(0))
	f.Add(uint8(1), uint8(2), uint16(2), uint8(2), uint8(0), uint8(0), uint8(0))
	f.Add(uint8(0), uint8(0), uint16(0), uint8(0), uint8(1), uint8(0), uint8(0))
	f.Add(uint8(1), uint8(1), uint16(1), uint8(1), uint8(2), uint8(0), uint8(0))
	f.Add(uint8(2), uint8(2), uint16(2), uint8(2), uint8(0), uint8(1), uint8(1))
	const tooMany = DefaultMaxBlobs + 1
	f.Add(uint8(tooMany), uint8(tooMany), uint16(tooMany*kzg4844.CellProofsPerBlob), uint8(tooMany), uint8(1), uint8(0), uint8(0))
	pool := blobPool(f)
	f.Fuzz(func(t *testing.T, blobs, commitments uint8, proofs uint16, hashes, version, shift, hashShift uint8) {
		sc := &types.BlobTxSidecar{Version: version}
		for i := range int(blobs) % (DefaultMaxBlobs + 3) {
			sc.Blobs = append(sc.Blobs, pool.blobs[i%len(pool.blobs)])
		}
		for i := range int(commitments) % (DefaultMaxBlobs + 3) {
			sc.Commitments = append(sc.Commitments, pool.commitments[(i+int(shift))%len(pool.blobs)])
		}
		perBlob := pool.blobProofs
		if version == types.BlobSidecarVersion1 {
			perBlob = pool.cellProofs
		}
		for i := range int(proofs) % (len(perBlob) + 1) {
			sc.Proofs = append(sc.Proofs, perBlob[i])
		}
		b := blobTx()
		b.Gas, b.BlobHashes, b.Sidecar = 100_000, nil, sc
		for i := range int(hashes) % (DefaultMaxBlobs + 3) {
			b.BlobHashes = append(b.BlobHashes, kzg4844.CalcBlobHashV1(sha256.New(), &pool.commitments[(i+int(hashShift))%len(pool.blobs)]))
		}
		tx, err := types.SignNewTx(testKey, types.LatestSignerForChainID(testChain), b)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := tx.MarshalBinary()
		if err != nil {
			return // go-ethereum itself refuses to encode the sidecar
		}
		got, err := DecodeTx(raw, testRules())
		if err != nil {
			if !IsTxError(err) {
				t.Fatalf("error %v is not a TxError", err)
			}
			return
		}
		acc := got.Tx.BlobTxSidecar()
		if acc == nil || len(acc.Blobs) != len(acc.Commitments) || len(acc.Blobs) != len(got.Tx.BlobHashes()) ||
			len(acc.Blobs) == 0 || len(acc.Blobs) > DefaultMaxBlobs {
			t.Fatalf("accepted a sidecar of %d blobs, %d commitments, %d proofs for %d blob hashes",
				len(sc.Blobs), len(sc.Commitments), len(sc.Proofs), len(b.BlobHashes))
		}
	})
}

// blobPoolOf is what FuzzDecodeBlobTx builds sidecars from: distinct
// blobs with their commitments, one blob proof each, and the cell
// proofs of all of them in order.
type blobPoolOf struct {
	blobs       []kzg4844.Blob
	commitments []kzg4844.Commitment
	blobProofs  []kzg4844.Proof
	cellProofs  []kzg4844.Proof
}

// blobPool is the fixtures' blobs with their KZG material.
func blobPool(t testing.TB) blobPoolOf {
	var p blobPoolOf
	for i, f := range blobFixtures(t) {
		p.blobs, p.commitments = append(p.blobs, testBlob(i)), append(p.commitments, f.Commitment)
		p.blobProofs, p.cellProofs = append(p.blobProofs, f.Proof), append(p.cellProofs, f.CellProofs...)
	}
	return p
}
