package validators

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"

	blst "github.com/supranational/blst/bindings/go"
)

// DST is the domain separation tag of Ethereum's BLS signatures (the
// proof-of-possession ciphersuite of the consensus specs), so keys of
// validator clients and remote signers sign registrations unchanged.
const DST = "BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_"

// registrationTag names what a registration signature is for, so that it
// can never be replayed as a signature over anything else.
const registrationTag = "blockspace.exchange validator registration v1"

// Domain returns the registration domain of a chain: SHA-256 of the tag
// followed by the chain id as 8 bytes big-endian.
func Domain(chainID int64) [32]byte {
	b := make([]byte, 0, len(registrationTag)+8)
	b = append(b, registrationTag...)
	b = binary.BigEndian.AppendUint64(b, uint64(chainID))
	return sha256.Sum256(b)
}

// Message is what a validator key signs to register for a user: the
// chain's registration domain (32 bytes) followed by the user's 20-byte
// address, 52 bytes in all, signed under DST (docs/validators.md).
func Message(chainID int64, address [20]byte) []byte {
	d := Domain(chainID)
	return append(d[:], address[:]...)
}

// ParseAddress reads a 0x hex address of 20 bytes.
func ParseAddress(s string) ([20]byte, error) {
	var a [20]byte
	b, err := hex.DecodeString(strings.TrimPrefix(strings.ToLower(s), "0x"))
	if err != nil || len(b) != 20 {
		return a, errors.New("address is not 0x hex of 20 bytes")
	}
	copy(a[:], b)
	return a, nil
}

// errMalformedSignature marks a signature that is not 96 bytes of hex.
var errMalformedSignature = errors.New("signature is not 0x-prefixed hex of 96 bytes")

// decodeSignature reads a compressed G2 signature as 0x hex.
func decodeSignature(s string) ([]byte, error) {
	if !strings.HasPrefix(strings.ToLower(s), "0x") {
		return nil, errMalformedSignature
	}
	b, err := hex.DecodeString(s[2:])
	if err != nil || len(b) != 96 {
		return nil, errMalformedSignature
	}
	return b, nil
}

// verify reports whether sig is a valid signature of msg by pubkey. The
// key and the signature are checked to be on their curves and in their
// subgroups; the infinity key is refused.
func verify(pubkey, sig, msg []byte) bool {
	pk := new(blst.P1Affine).Uncompress(pubkey)
	if pk == nil || !pk.KeyValidate() {
		return false
	}
	s := new(blst.P2Affine).Uncompress(sig)
	if s == nil {
		return false
	}
	return s.Verify(true, pk, false, msg, []byte(DST))
}

// Sign signs the registration message of address with a BLS secret key;
// the dev stack and tests use it, clients use their own signer.
func Sign(secret *blst.SecretKey, chainID int64, address [20]byte) (pubkey, signature string) {
	pk := new(blst.P1Affine).From(secret)
	sig := new(blst.P2Affine).Sign(secret, Message(chainID, address), []byte(DST))
	return "0x" + hex.EncodeToString(pk.Compress()), "0x" + hex.EncodeToString(sig.Compress())
}

// SecretKey derives a BLS secret key from at least 32 bytes of seed
// (EIP-2333 KeyGen).
func SecretKey(seed []byte) (*blst.SecretKey, error) {
	if len(seed) < 32 {
		return nil, errors.New("bls seed shorter than 32 bytes")
	}
	sk := blst.KeyGen(seed)
	if sk == nil {
		return nil, errors.New("bls key generation failed")
	}
	return sk, nil
}
