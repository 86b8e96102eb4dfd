package eip712

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
)

// doc is a login challenge as ingress writes it.
const doc = `{"types":{"EIP712Domain":[{"name":"name","type":"string"},{"name":"version","type":"string"},{"name":"chainId","type":"uint256"},{"name":"verifyingContract","type":"address"}],` +
	`"data":[{"name":"hash","type":"string"},{"name":"message","type":"string"},{"name":"domain","type":"string"}]},"primaryType":"data",` +
	`"domain":{"name":"Blockspace Exchange Login","version":"1","chainId":1337,"verifyingContract":"0x0000000000000000000000000000000000000000"},` +
	`"message":{"hash":"0x1a2b3c4d","message":"I confirm that I own this wallet and want to log in.","domain":"127.0.0.1:8080"}}`

// digest is doc's EIP-712 hash written out by hand:
// keccak256(0x1901 ‖ hashStruct(domain) ‖ hashStruct(message)), where a
// string member is encoded as its keccak256 and uint256 and address as 32
// big-endian bytes.
func digest() []byte {
	k := func(s string) []byte { return crypto.Keccak256([]byte(s)) }
	domain := crypto.Keccak256(
		k("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"),
		k("Blockspace Exchange Login"), k("1"), big.NewInt(1337).FillBytes(make([]byte, 32)), make([]byte, 32))
	message := crypto.Keccak256(
		k("data(string hash,string message,string domain)"),
		k("0x1a2b3c4d"), k("I confirm that I own this wallet and want to log in."), k("127.0.0.1:8080"))
	return crypto.Keccak256([]byte{0x19, 0x01}, domain, message)
}

func TestSignRecoversToTheWallet(t *testing.T) {
	w, err := NewWallet()
	if err != nil {
		t.Fatal(err)
	}
	sig, err := w.Sign(doc)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := hexutil.Decode(sig)
	if err != nil || len(raw) != 65 || (raw[64] != 27 && raw[64] != 28) {
		t.Fatalf("signature %s: %v; want 65 bytes with v 27 or 28", sig, err)
	}
	raw[64] -= 27
	pub, err := crypto.SigToPub(digest(), raw)
	if err != nil || crypto.PubkeyToAddress(*pub).Hex() != w.Address {
		t.Fatalf("signature does not recover to the signing key over the EIP-712 digest: %v", err)
	}
}

func TestSignRefusesMalformedDocuments(t *testing.T) {
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]string{
		"not JSON":             `{"types":`,
		"primary type missing": `{"types":{"EIP712Domain":[]},"primaryType":"data","domain":{},"message":{}}`,
	} {
		if sig, err := Sign(key, d); err == nil {
			t.Errorf("%s: signed as %s", name, sig)
		}
	}
}
