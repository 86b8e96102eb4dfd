package orderflow

import (
	"testing"

	"github.com/ethereum/go-ethereum/core/types"
)

// BenchmarkDecodeBlobTx decodes and checks a blob transaction carrying the
// most blobs a block takes with their cell proofs, the network form since
// Fusaka; most of its cost is verifying the proofs.
func BenchmarkDecodeBlobTx(b *testing.B) {
	raw := sign(b, testChain, blobTxWith(blobSidecar(b, DefaultMaxBlobs, types.BlobSidecarVersion1)))
	b.ResetTimer()
	for range b.N {
		if _, err := DecodeRawTx(raw, testRules()); err != nil {
			b.Fatal(err)
		}
	}
}
