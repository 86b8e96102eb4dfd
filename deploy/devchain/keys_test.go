package devchain

import (
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// keyRow is one row of README.md's "Dev chain keys" table:
// | key | `0x<private key>` | `0x<address>` | use |.
var keyRow = regexp.MustCompile("^\\| (\\d+) \\| `0x([0-9a-f]{64})` \\| `(0x[0-9a-f]{40})` \\| [^|]+ \\|$")

// TestREADMEListsTheFundedKeys holds README.md's table of dev keys equal
// to what the chain funds: the same keys in the same order, each address
// the key's, each holding 1,000,000 ETH at genesis, the operator's row
// saying so.
func TestREADMEListsTheFundedKeys(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(string(readme), "\n") {
		m := keyRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if m[1] != strconv.Itoa(len(listed)) {
			t.Fatalf("row %q: key %s where %d comes next", line, m[1], len(listed))
		}
		k, err := crypto.HexToECDSA(m[2])
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.ToLower(crypto.PubkeyToAddress(k.PublicKey).Hex()); got != m[3] {
			t.Errorf("key %s: README says address %s, the key's is %s", m[1], m[3], got)
		}
		if len(listed) == OperatorKey && !strings.Contains(line, "OperatorKey") {
			t.Errorf("key %d is the operator, its row does not say so: %s", OperatorKey, line)
		}
		listed = append(listed, m[2])
	}
	if strings.Join(listed, ",") != strings.Join(DevKeys, ",") {
		t.Fatalf("README lists %d keys %v\nthe chain funds %d: %v", len(listed), listed, len(DevKeys), DevKeys)
	}

	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want, _ := new(big.Int).SetString("1000000000000000000000000", 10)
	for i := range DevKeys {
		got, err := c.Client().BalanceAt(t.Context(), c.Address(i), big.NewInt(0))
		if err != nil {
			t.Fatal(err)
		}
		if got.Cmp(want) != 0 {
			t.Errorf("key %d (%s) holds %s wei at genesis, README says 1,000,000 ETH", i, c.Address(i), got)
		}
	}
	// A key outside the list, a well-known test key of other tools, holds
	// nothing, as README says.
	other := common.HexToAddress("0x15d34aaf54267db7d7c367839aaf71a00a2c6a65")
	if got, err := c.Client().BalanceAt(t.Context(), other, big.NewInt(0)); err != nil || got.Sign() != 0 {
		t.Errorf("%s holds %v (%v)", other, got, err)
	}
}
