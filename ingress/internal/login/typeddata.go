package login

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// Statement is the fixed ownership statement of the typed data's message.
const Statement = "I confirm that I own this wallet and want to log in to the exchange."

const zeroAddress = "0x0000000000000000000000000000000000000000"

// typedDataDoc is the EIP-712 document sent to the wallet and stored with
// the nonce. chainId is a JSON number so that ethers, viem and
// go-ethereum accept the domain as it is.
type typedDataDoc struct {
	Types       map[string][]apitypes.Type `json:"types"`
	PrimaryType string                     `json:"primaryType"`
	Domain      typedDomain                `json:"domain"`
	Message     typedMessage               `json:"message"`
}

type typedDomain struct {
	Name              string `json:"name"`
	Version           string `json:"version"`
	ChainID           int64  `json:"chainId"`
	VerifyingContract string `json:"verifyingContract"`
}

type typedMessage struct {
	Hash    string `json:"hash"`
	Message string `json:"message"`
	Domain  string `json:"domain"`
}

// newTypedData is the login document of docs/api.md "Login, sessions and
// users".
func newTypedData(product string, chainID int64, nonce, host string) typedDataDoc {
	return typedDataDoc{
		Types: map[string][]apitypes.Type{
			"EIP712Domain": {
				{Name: "name", Type: "string"}, {Name: "version", Type: "string"},
				{Name: "chainId", Type: "uint256"}, {Name: "verifyingContract", Type: "address"},
			},
			"data": {{Name: "hash", Type: "string"}, {Name: "message", Type: "string"}, {Name: "domain", Type: "string"}},
		},
		PrimaryType: "data",
		Domain:      typedDomain{Name: product + " Login", Version: "1", ChainID: chainID, VerifyingContract: zeroAddress},
		Message:     typedMessage{Hash: nonce, Message: Statement, Domain: host},
	}
}

// hash is the EIP-712 digest the wallet signs.
func (d typedDataDoc) hash() ([]byte, error) {
	td := apitypes.TypedData{
		Types:       apitypes.Types(d.Types),
		PrimaryType: d.PrimaryType,
		Domain: apitypes.TypedDataDomain{
			Name: d.Domain.Name, Version: d.Domain.Version,
			ChainId:           (*math.HexOrDecimal256)(big.NewInt(d.Domain.ChainID)),
			VerifyingContract: d.Domain.VerifyingContract,
		},
		Message: apitypes.TypedDataMessage{"hash": d.Message.Hash, "message": d.Message.Message, "domain": d.Message.Domain},
	}
	h, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		return nil, fmt.Errorf("hash typed data: %w", err)
	}
	return h, nil
}

func parseTypedData(raw string) (typedDataDoc, error) {
	var d typedDataDoc
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		return d, fmt.Errorf("stored typed data: %w", err)
	}
	return d, nil
}

var errBadSignature = errors.New("signature does not recover to a public key")

// recoverSigner returns the address whose key made sig over digest. sig is
// 65 bytes r‖s‖v with v 0/1 (raw) or 27/28 (as wallets write it).
func recoverSigner(digest, sig []byte) (common.Address, error) {
	if len(sig) != crypto.SignatureLength {
		return common.Address{}, fmt.Errorf("signature must be %d bytes, got %d", crypto.SignatureLength, len(sig))
	}
	s := make([]byte, len(sig))
	copy(s, sig)
	if s[64] >= 27 {
		s[64] -= 27
	}
	if s[64] > 1 {
		return common.Address{}, fmt.Errorf("signature recovery id v must be 0, 1, 27 or 28, got %d", sig[64])
	}
	pub, err := crypto.SigToPub(digest, s)
	if err != nil {
		return common.Address{}, errBadSignature
	}
	return crypto.PubkeyToAddress(*pub), nil
}
