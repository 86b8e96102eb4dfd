package orderflow

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto/kzg4844"
)

// The tests' blobs are deterministic, so their KZG material is computed
// once and kept in testdata/blobs.json: under -race, computing a blob's
// proof and cell proofs takes seconds, many times what verifying them
// takes, and the tests build sidecars of up to ten blobs dozens of times.
// TestBlobFixtures holds the file to what the library computes;
// -update-blobs rewrites it:
//
//	go test -run TestBlobFixtures -update-blobs ./platform/orderflow/
var updateBlobs = flag.Bool("update-blobs", false, "rewrite testdata/blobs.json from the KZG library")

const blobFixturesFile = "blobs.json"

// fixtureBlobs is how many blobs the fixtures hold: one more than a
// transaction may carry, for the sidecars refused by their count.
const fixtureBlobs = DefaultMaxBlobs + 1

// blobFixture is one blob's commitment, its proof (sidecar version 0) and
// its cell proofs (version 1).
type blobFixture struct {
	Commitment kzg4844.Commitment `json:"commitment"`
	Proof      kzg4844.Proof      `json:"proof"`
	CellProofs []kzg4844.Proof    `json:"cellProofs"`
}

// testBlob is the i-th of the tests' distinct blobs: all zero but for
// byte 1, a field element with a zero top byte and so canonical.
func testBlob(i int) kzg4844.Blob {
	var blob kzg4844.Blob
	blob[1] = byte(i + 1)
	return blob
}

// computeBlobFixture computes blob i's KZG material with the library.
func computeBlobFixture(i int) (blobFixture, error) {
	blob := testBlob(i)
	c, err := kzg4844.BlobToCommitment(&blob)
	if err != nil {
		return blobFixture{}, err
	}
	p, err := kzg4844.ComputeBlobProof(&blob, c)
	if err != nil {
		return blobFixture{}, err
	}
	cells, err := kzg4844.ComputeCellProofs(&blob)
	if err != nil {
		return blobFixture{}, err
	}
	return blobFixture{Commitment: c, Proof: p, CellProofs: cells}, nil
}

// blobFixtures reads the KZG material of the first fixtureBlobs blobs.
func blobFixtures(t testing.TB) []blobFixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", blobFixturesFile))
	if err != nil {
		t.Fatal(err)
	}
	var fx []blobFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatalf("testdata/%s: %v", blobFixturesFile, err)
	}
	if len(fx) != fixtureBlobs {
		t.Fatalf("testdata/%s holds %d blobs, want %d: rerun with -update-blobs", blobFixturesFile, len(fx), fixtureBlobs)
	}
	for i, f := range fx {
		if len(f.CellProofs) != kzg4844.CellProofsPerBlob {
			t.Fatalf("testdata/%s: blob %d has %d cell proofs, want %d", blobFixturesFile, i, len(f.CellProofs), kzg4844.CellProofsPerBlob)
		}
	}
	return fx
}

// TestBlobFixtures: the fixtures are what the library computes. Blob 0's
// commitment, proof and cell proofs are recomputed and compared; the
// others' commitments are recomputed (cheap) and their proofs verified
// against them, which for KZG, whose proofs are unique, is as strict as
// recomputing them and much cheaper.
func TestBlobFixtures(t *testing.T) {
	if *updateBlobs {
		writeBlobFixtures(t)
	}
	fx := blobFixtures(t)
	want, err := computeBlobFixture(0)
	if err != nil {
		t.Fatal(err)
	}
	if fx[0].Commitment != want.Commitment || fx[0].Proof != want.Proof || !slices.Equal(fx[0].CellProofs, want.CellProofs) {
		t.Fatalf("testdata/%s: blob 0 is not what the KZG library computes: rerun with -update-blobs", blobFixturesFile)
	}
	blobs := make([]kzg4844.Blob, len(fx))
	var commitments []kzg4844.Commitment
	var cellProofs []kzg4844.Proof
	for i, f := range fx {
		blobs[i] = testBlob(i)
		c, err := kzg4844.BlobToCommitment(&blobs[i])
		if err != nil {
			t.Fatal(err)
		}
		if f.Commitment != c {
			t.Fatalf("testdata/%s: blob %d's commitment is not what the KZG library computes", blobFixturesFile, i)
		}
		if err := kzg4844.VerifyBlobProof(&blobs[i], f.Commitment, f.Proof); err != nil {
			t.Fatalf("testdata/%s: blob %d's proof: %v", blobFixturesFile, i, err)
		}
		commitments, cellProofs = append(commitments, f.Commitment), append(cellProofs, f.CellProofs...)
	}
	if err := kzg4844.VerifyCellProofs(blobs, commitments, cellProofs); err != nil {
		t.Fatalf("testdata/%s: cell proofs: %v", blobFixturesFile, err)
	}
}

func writeBlobFixtures(t *testing.T) {
	fx := make([]blobFixture, fixtureBlobs)
	for i := range fx {
		var err error
		if fx[i], err = computeBlobFixture(i); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.MarshalIndent(fx, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", blobFixturesFile), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// blobSidecar returns a sidecar of the first n test blobs with their
// commitments and proofs from the fixtures: one proof a blob (version 0),
// or the cell proofs of version 1.
func blobSidecar(t testing.TB, n int, version byte) *types.BlobTxSidecar {
	t.Helper()
	fx := blobFixtures(t)
	if n > len(fx) {
		t.Fatalf("%d blobs asked for, the fixtures hold %d", n, len(fx))
	}
	sc := &types.BlobTxSidecar{Version: version}
	for i, f := range fx[:n] {
		sc.Blobs, sc.Commitments = append(sc.Blobs, testBlob(i)), append(sc.Commitments, f.Commitment)
		switch version {
		case types.BlobSidecarVersion0:
			sc.Proofs = append(sc.Proofs, f.Proof)
		case types.BlobSidecarVersion1:
			sc.Proofs = append(sc.Proofs, f.CellProofs...)
		default:
			t.Fatalf("sidecar version %d", version)
		}
	}
	return sc
}
