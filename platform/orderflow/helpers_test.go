package orderflow

import (
	"crypto/ecdsa"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"
)

var (
	testChain = big.NewInt(1337)
	testKey   = mustKey("b71c71a67e1177ad4e901695e1b4b9ee17ae16c6668d313eac2f96dbcda3f291")
	testTo    = common.HexToAddress("0x00000000000000000000000000000000000000aa")
	gwei      = big.NewInt(1_000_000_000)
)

func mustKey(h string) *ecdsa.PrivateKey {
	k, err := crypto.HexToECDSA(h)
	if err != nil {
		panic(err)
	}
	return k
}

func testRules() Rules { return Rules{ChainID: testChain} }

// sign signs data for chain with the test key and returns the raw 0x hex.
func sign(t testing.TB, chain *big.Int, data types.TxData) string {
	t.Helper()
	tx, err := types.SignNewTx(testKey, types.LatestSignerForChainID(chain), data)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return hexutil.Encode(b)
}

func dynamicTx(nonce uint64) *types.DynamicFeeTx {
	return &types.DynamicFeeTx{ChainID: testChain, Nonce: nonce, GasTipCap: gwei, GasFeeCap: new(big.Int).Mul(gwei, big.NewInt(50)),
		Gas: 21000, To: &testTo, Value: big.NewInt(1)}
}

func legacyTx(nonce uint64) *types.LegacyTx {
	return &types.LegacyTx{Nonce: nonce, GasPrice: gwei, Gas: 21000, To: &testTo, Value: big.NewInt(2)}
}

func blobTx() *types.BlobTx {
	return &types.BlobTx{ChainID: uint256.MustFromBig(testChain), Nonce: 1, GasTipCap: uint256.NewInt(1e9), GasFeeCap: uint256.NewInt(50e9),
		Gas: 21000, To: testTo, Value: uint256.NewInt(0), BlobFeeCap: uint256.NewInt(1e9),
		BlobHashes: []common.Hash{common.HexToHash("0x01aa000000000000000000000000000000000000000000000000000000000001")}}
}

func setCodeTx(t testing.TB) *types.SetCodeTx {
	auth, err := types.SignSetCode(testKey, types.SetCodeAuthorization{ChainID: *uint256.MustFromBig(testChain), Address: testTo, Nonce: 3})
	if err != nil {
		t.Fatal(err)
	}
	return &types.SetCodeTx{ChainID: uint256.MustFromBig(testChain), Nonce: 2, GasTipCap: uint256.NewInt(1e9), GasFeeCap: uint256.NewInt(50e9),
		Gas: 60000, To: testTo, Value: uint256.NewInt(0), AuthList: []types.SetCodeAuthorization{auth}}
}

// blobTxWith is blobTx carrying sc and the blob hashes of its commitments.
func blobTxWith(sc *types.BlobTxSidecar) *types.BlobTx {
	b := blobTx()
	b.BlobHashes, b.Sidecar = sc.BlobHashes(), sc
	return b
}

// blobTxWithExtraBlob is a blob transaction naming one blob whose sidecar
// carries two blobs with a proof each but only the named blob's
// commitment.
func blobTxWithExtraBlob(t testing.TB, version byte) *types.BlobTx {
	sc := blobSidecar(t, 2, version)
	b := blobTxWith(sc)
	b.BlobHashes = b.BlobHashes[:1]
	sc.Commitments = sc.Commitments[:1]
	return b
}
