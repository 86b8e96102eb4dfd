package collateral_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"blockspace.exchange/platform/chain/collateral"
)

// TestBindingMatchesTheCompiledContract fails when Collateral.abi or
// Collateral.bin changed without running generate.sh.
func TestBindingMatchesTheCompiledContract(t *testing.T) {
	abiFile, err := os.ReadFile("Collateral.abi")
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal(abiFile, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(collateral.CollateralMetaData.ABI), &got); err != nil {
		t.Fatal(err)
	}
	if canonical(t, want) != canonical(t, got) {
		t.Fatal("collateral.go was generated from another ABI; run generate.sh")
	}
	bin, err := os.ReadFile("Collateral.bin")
	if err != nil {
		t.Fatal(err)
	}
	if "0x"+strings.TrimSpace(string(bin)) != collateral.CollateralMetaData.Bin {
		t.Fatal("collateral.go was generated from other bytecode; run generate.sh")
	}
}

// canonical is the JSON of v with sorted keys and no whitespace; abigen
// drops the spaces inside type names ("address payable").
func canonical(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(b)), "")
}
