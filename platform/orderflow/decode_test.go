package orderflow

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/crypto/kzg4844"
	"github.com/holiman/uint256"
)

func TestDecodeTxTypes(t *testing.T) {
	from := strings.ToLower(crypto.PubkeyToAddress(testKey.PublicKey).Hex())
	cases := []struct {
		name     string
		data     types.TxData
		wantType string
		check    func(t *testing.T, d map[string]any)
	}{
		{"legacy", legacyTx(0), "0x0", func(t *testing.T, d map[string]any) {
			if d["gasPrice"] != "0x3b9aca00" || d["maxFeePerGas"] != nil {
				t.Errorf("fees %v %v", d["gasPrice"], d["maxFeePerGas"])
			}
		}},
		{"access list", &types.AccessListTx{ChainID: testChain, Nonce: 1, GasPrice: gwei, Gas: 30000, To: &testTo,
			AccessList: types.AccessList{{Address: testTo, StorageKeys: nil}}}, "0x1", func(t *testing.T, d map[string]any) {
			if al := d["accessList"].([]any); len(al) != 1 {
				t.Errorf("accessList %v", al)
			}
		}},
		{"dynamic fee", dynamicTx(5), "0x2", func(t *testing.T, d map[string]any) {
			if d["maxPriorityFeePerGas"] != "0x3b9aca00" || d["nonce"] != "0x5" || d["gasPrice"] != nil {
				t.Errorf("fields %v", d)
			}
		}},
		{"blob", blobTx(), "0x3", func(t *testing.T, d map[string]any) {
			if len(d["blobVersionedHashes"].([]any)) != 1 || d["maxFeePerBlobGas"] != "0x3b9aca00" {
				t.Errorf("blob fields %v", d)
			}
		}},
		{"set code", setCodeTx(t), "0x4", func(t *testing.T, d map[string]any) {
			auths := d["authorizationList"].([]any)
			if len(auths) != 1 || auths[0].(map[string]any)["authority"] != from {
				t.Errorf("authorizationList %v", auths)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := sign(t, testChain, c.data)
			tx, err := DecodeRawTx(raw, testRules())
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(tx.Decoded)
			var d map[string]any
			_ = json.Unmarshal(b, &d)
			for _, sig := range []string{"v", "r", "s", "yParity"} {
				if _, ok := d[sig]; ok {
					t.Errorf("decoded form carries signature field %s", sig)
				}
			}
			if d["type"] != c.wantType || d["from"] != from || d["chainId"] != "0x539" || d["hash"] != tx.Hash.Hex() {
				t.Errorf("decoded %s", b)
			}
			if tx.Raw != raw {
				t.Errorf("raw changed")
			}
			c.check(t, d)
		})
	}
}

func TestDecodeTxRejects(t *testing.T) {
	big100k := new(big.Int).Mul(gwei, big.NewInt(100_000))
	tooBig := dynamicTx(0)
	tooBig.Data = make([]byte, DefaultMaxTxBytes)
	cases := []struct {
		name string
		raw  func(t *testing.T) string
		want string
	}{
		{"not hex", func(*testing.T) string { return "0xzz" }, "not valid hex"},
		{"no prefix", func(*testing.T) string { return "f86b" }, "not 0x-prefixed"},
		{"empty", func(*testing.T) string { return "0x" }, "empty"},
		{"more than any transaction with blobs", func(*testing.T) string {
			return "0x" + strings.Repeat("00", testRules().WithDefaults().maxWireBytes()+1)
		}, "more than a transaction of 131072 bytes with 9 blobs"},
		{"garbage", func(*testing.T) string { return "0x02c0ffee" }, "cannot decode"},
		{"unknown type", func(*testing.T) string { return "0x7fc0" }, "cannot decode"},
		{"wrong chain id", func(t *testing.T) string {
			return sign(t, big.NewInt(1), &types.DynamicFeeTx{ChainID: big.NewInt(1), Gas: 21000, GasFeeCap: gwei, GasTipCap: gwei, To: &testTo})
		}, "chain id 1"},
		{"legacy without EIP-155", func(t *testing.T) string {
			tx, _ := types.SignTx(types.NewTx(legacyTx(0)), types.HomesteadSigner{}, testKey)
			b, _ := tx.MarshalBinary()
			return hexutil.Encode(b)
		}, "replay protection"},
		{"bad signature", func(t *testing.T) string {
			tx, _ := types.SignNewTx(testKey, types.LatestSignerForChainID(testChain), dynamicTx(0))
			v, r, _ := tx.RawSignatureValues()
			bad, _ := tx.WithSignature(types.LatestSignerForChainID(testChain), append(append(r.FillBytes(make([]byte, 32)), make([]byte, 32)...), byte(v.Uint64())))
			b, _ := bad.MarshalBinary()
			return hexutil.Encode(b)
		}, "signature"},
		{"oversized", func(t *testing.T) string { tooBig.Gas = 1 << 23; return sign(t, testChain, tooBig) }, "bytes, at most"},
		{"gas too low", func(t *testing.T) string { d := dynamicTx(0); d.Gas = 20999; return sign(t, testChain, d) }, "gas 20999"},
		{"gas too high", func(t *testing.T) string { d := dynamicTx(0); d.Gas = 1<<24 + 1; return sign(t, testChain, d) }, "gas 16777217"},
		{"zero fee cap", func(t *testing.T) string {
			d := dynamicTx(0)
			d.GasFeeCap, d.GasTipCap = big.NewInt(0), big.NewInt(0)
			return sign(t, testChain, d)
		}, "fee cap is zero"},
		{"absurd fee", func(t *testing.T) string { d := dynamicTx(0); d.GasFeeCap = big100k; return sign(t, testChain, d) }, "sanity limit"},
		{"tip above cap", func(t *testing.T) string {
			d := dynamicTx(0)
			d.GasTipCap = new(big.Int).Mul(gwei, big.NewInt(60))
			return sign(t, testChain, d)
		}, "above maxFeePerGas"},
		{"absurd nonce", func(t *testing.T) string { return sign(t, testChain, dynamicTx(1<<40)) }, "nonce"},
		{"blob without hashes", func(t *testing.T) string { b := blobTx(); b.BlobHashes = nil; return sign(t, testChain, b) }, "blob transaction without blob hashes"},
		{"ten blob hashes", func(t *testing.T) string {
			b := blobTx()
			b.BlobHashes = make([]common.Hash, DefaultMaxBlobs+1)
			for i := range b.BlobHashes {
				b.BlobHashes[i] = common.Hash{0x01, byte(i)}
			}
			return sign(t, testChain, b)
		}, "10 blob hashes, at most 9"},
		{"ten blobs in the sidecar", func(t *testing.T) string {
			return sign(t, testChain, blobTxWith(blobSidecar(t, DefaultMaxBlobs+1, types.BlobSidecarVersion0)))
		}, "10 blobs, at most 9"},
		{"sidecar of other blobs", func(t *testing.T) string {
			b := blobTx() // names blob hash 0x01aa…01
			b.Sidecar = blobSidecar(t, 1, types.BlobSidecarVersion0)
			return sign(t, testChain, b)
		}, "blob sidecar does not match the blob hashes"},
		{"sidecar missing a blob", func(t *testing.T) string {
			sc := blobSidecar(t, 2, types.BlobSidecarVersion0)
			b := blobTxWith(sc)
			sc.Blobs, sc.Commitments, sc.Proofs = sc.Blobs[:1], sc.Commitments[:1], sc.Proofs[:1]
			return sign(t, testChain, b)
		}, "blob sidecar does not match the blob hashes"},
		{"a blob more than commitments, blob proofs", func(t *testing.T) string {
			return sign(t, testChain, blobTxWithExtraBlob(t, types.BlobSidecarVersion0))
		}, "blob sidecar has 2 blobs for 1 commitments"},
		{"a blob more than commitments, cell proofs", func(t *testing.T) string {
			return sign(t, testChain, blobTxWithExtraBlob(t, types.BlobSidecarVersion1))
		}, "blob sidecar has 2 blobs for 1 commitments"},
		{"blob proof of another blob", func(t *testing.T) string {
			sc := blobSidecar(t, 2, types.BlobSidecarVersion0)
			sc.Proofs[0], sc.Proofs[1] = sc.Proofs[1], sc.Proofs[0]
			return sign(t, testChain, blobTxWith(sc))
		}, "blob 0: its KZG proof does not verify against its commitment"},
		{"a blob proof missing", func(t *testing.T) string {
			sc := blobSidecar(t, 2, types.BlobSidecarVersion0)
			sc.Proofs = sc.Proofs[:1]
			return sign(t, testChain, blobTxWith(sc))
		}, "blob sidecar has 1 proofs for 2 blobs"},
		{"a cell proof of another blob", func(t *testing.T) string {
			sc := blobSidecar(t, 2, types.BlobSidecarVersion1)
			sc.Proofs[3] = sc.Proofs[kzg4844.CellProofsPerBlob+3]
			return sign(t, testChain, blobTxWith(sc))
		}, "blob cell proofs do not verify against the commitments"},
		{"cell proofs missing", func(t *testing.T) string {
			sc := blobSidecar(t, 1, types.BlobSidecarVersion1)
			sc.Proofs = sc.Proofs[:kzg4844.CellProofsPerBlob-1]
			return sign(t, testChain, blobTxWith(sc))
		}, "blob sidecar has 127 cell proofs for 1 blobs, want 128"},
		{"bad signature and blob proofs of other blobs", func(t *testing.T) string {
			// Both the signature and the proofs are wrong: the signature
			// is what is reported, because the proofs are never verified
			// for input that recovers no sender.
			sc := blobSidecar(t, 2, types.BlobSidecarVersion0)
			sc.Proofs[0], sc.Proofs[1] = sc.Proofs[1], sc.Proofs[0]
			tx, err := types.SignNewTx(testKey, types.LatestSignerForChainID(testChain), blobTxWith(sc))
			if err != nil {
				t.Fatal(err)
			}
			v, r, _ := tx.RawSignatureValues()
			bad, err := tx.WithSignature(types.LatestSignerForChainID(testChain), append(append(r.FillBytes(make([]byte, 32)), make([]byte, 32)...), byte(v.Uint64())))
			if err != nil {
				t.Fatal(err)
			}
			b, err := bad.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			return hexutil.Encode(b)
		}, "signature does not recover a sender"},
		{"zero maxFeePerBlobGas", func(t *testing.T) string {
			b := blobTx()
			b.BlobFeeCap = uint256.NewInt(0)
			return sign(t, testChain, b)
		}, "maxFeePerBlobGas is zero"},
		{"set code without authorizations", func(t *testing.T) string { d := setCodeTx(t); d.AuthList = nil; return sign(t, testChain, d) }, "set-code transaction without authorizations"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeRawTx(c.raw(t), testRules())
			if err == nil || !IsTxError(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want a TxError containing %q", err, c.want)
			}
		})
	}
}

// TestDecodeTxCountsBeforeProofs: a sidecar whose counts are wrong (more
// blobs than a transaction takes, a blob without its commitment, proofs
// not one a blob or CellProofsPerBlob a blob) is refused for its counts
// however wrong its proofs are: the counts are checked before any proof
// is verified, so input out of range never buys the dearest check. Every
// proof here is the point at infinity, which proves none of the test
// blobs, as the first two cases show with the counts right.
func TestDecodeTxCountsBeforeProofs(t *testing.T) {
	v0, v1 := types.BlobSidecarVersion0, types.BlobSidecarVersion1
	cases := []struct {
		name    string
		blobs   int
		version byte
		edit    func(b *types.BlobTx, sc *types.BlobTxSidecar)
		want    string
	}{
		{"counts right, blob proofs", 1, v0, nil, "blob 0: its KZG proof does not verify against its commitment"},
		{"counts right, cell proofs", 1, v1, nil, "blob cell proofs do not verify against the commitments"},
		{"ten blobs, blob proofs", DefaultMaxBlobs + 1, v0, nil, "10 blobs, at most 9"},
		{"ten blobs, cell proofs", DefaultMaxBlobs + 1, v1, nil, "10 blobs, at most 9"},
		{"a blob more than commitments", 2, v1, func(b *types.BlobTx, sc *types.BlobTxSidecar) {
			b.BlobHashes, sc.Commitments = b.BlobHashes[:1], sc.Commitments[:1]
		}, "blob sidecar has 2 blobs for 1 commitments"},
		{"a blob proof missing", 2, v0, func(_ *types.BlobTx, sc *types.BlobTxSidecar) { sc.Proofs = sc.Proofs[:1] },
			"blob sidecar has 1 proofs for 2 blobs"},
		{"a cell proof missing", 2, v1, func(_ *types.BlobTx, sc *types.BlobTxSidecar) { sc.Proofs = sc.Proofs[:len(sc.Proofs)-1] },
			"blob sidecar has 255 cell proofs for 2 blobs, want 256"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc := blobSidecar(t, c.blobs, c.version)
			for i := range sc.Proofs {
				sc.Proofs[i] = kzg4844.Proof{0xc0}
			}
			b := blobTxWith(sc)
			if c.edit != nil {
				c.edit(b, sc)
			}
			// DecodeTx, not DecodeRawTx: ten blobs with their cell proofs
			// are more bytes than the raw form may take, refused before
			// decoding.
			_, err := DecodeTx(hexutil.MustDecode(sign(t, testChain, b)), testRules())
			if err == nil || !IsTxError(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want a TxError containing %q", err, c.want)
			}
		})
	}
}

// TestDecodeBlobTxWithSidecar: a blob transaction sent with its blobs,
// commitments and proofs (one proof a blob, or the cell proofs of the
// Fusaka network form) is accepted up to the most blobs a block takes;
// the raw form keeps the sidecar, the hash and the decoded form are those
// of the transaction alone.
func TestDecodeBlobTxWithSidecar(t *testing.T) {
	for _, tc := range []struct {
		name    string
		blobs   int
		version byte
		data    int // bytes of calldata
	}{
		{"one blob, blob proof", 1, types.BlobSidecarVersion0, 0},
		{"two blobs, cell proofs", 2, types.BlobSidecarVersion1, 0},
		{"most blobs, cell proofs", DefaultMaxBlobs, types.BlobSidecarVersion1, 0},
		{"most blobs, cell proofs, largest body", DefaultMaxBlobs, types.BlobSidecarVersion1, DefaultMaxTxBytes - 1024},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := blobSidecar(t, tc.blobs, tc.version)
			b := blobTxWith(sc)
			b.Data, b.Gas = make([]byte, tc.data), 2_000_000
			raw := sign(t, testChain, b)
			tx, err := DecodeRawTx(raw, testRules())
			if err != nil {
				t.Fatal(err)
			}
			got := tx.Tx.BlobTxSidecar()
			if tx.Raw != raw || got == nil || len(got.Blobs) != tc.blobs || got.Version != tc.version {
				t.Fatalf("sidecar lost: raw kept %t, sidecar %v", tx.Raw == raw, got != nil)
			}
			if tx.Hash != tx.Tx.WithoutBlobTxSidecar().Hash() {
				t.Fatalf("hash %s is not the transaction's", tx.Hash)
			}
			want := sc.BlobHashes()
			if len(tx.Decoded.BlobVersionedHashes) != len(want) {
				t.Fatalf("blobVersionedHashes %v, want %v", tx.Decoded.BlobVersionedHashes, want)
			}
			for i, h := range want {
				if tx.Decoded.BlobVersionedHashes[i] != h.Hex() {
					t.Fatalf("blobVersionedHashes[%d] %s, want %s", i, tx.Decoded.BlobVersionedHashes[i], h.Hex())
				}
			}
		})
	}
}

func FuzzDecodeTx(f *testing.F) {
	f.Add(hexutil.MustDecode(sign(f, testChain, dynamicTx(1))))
	f.Add(hexutil.MustDecode(sign(f, testChain, legacyTx(1))))
	f.Add(hexutil.MustDecode(sign(f, testChain, blobTx())))
	f.Add(hexutil.MustDecode(sign(f, testChain, setCodeTx(f))))
	f.Add([]byte{0x02, 0xc0})
	f.Fuzz(func(t *testing.T, b []byte) {
		tx, err := DecodeTx(b, testRules())
		if err != nil {
			if !IsTxError(err) {
				t.Fatalf("error %v is not a TxError", err)
			}
			return
		}
		if tx.Tx.ChainId().Cmp(testChain) != 0 || tx.Decoded.Hash != tx.Hash.Hex() {
			t.Fatalf("accepted %x with chain %s", b, tx.Tx.ChainId())
		}
		if _, err := json.Marshal(tx.Decoded); err != nil {
			t.Fatal(err)
		}
	})
}
