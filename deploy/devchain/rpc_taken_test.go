package devchain

import (
	"net"
	"strings"
	"testing"
)

// A JSON-RPC port another program holds is an error, not a panic.
func TestTakenRPCPortIsAnError(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	c, err := New(WithRPC("127.0.0.1", taken.Addr().(*net.TCPAddr).Port))
	if err == nil {
		c.Close()
		t.Fatal("the chain started on a taken port")
	}
	if !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("error %q does not say the address is in use", err)
	}
}
