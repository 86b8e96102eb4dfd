package ratelimit

import (
	"net/http/httptest"
	"testing"
)

// Addresses of one IPv6 /64 share a key; IPv4 addresses, IPv4-mapped
// IPv6 addresses and other /64s keep their own.
func TestClientKey(t *testing.T) {
	for _, tc := range []struct{ remote, header, want string }{
		{"192.0.2.7:5000", "", "192.0.2.7"},
		{"[2001:db8:1:2::7]:5000", "", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff:ffff:ffff:ffff]:5000", "", "2001:db8:1:2::/64"},
		{"[2001:db8:1:3::7]:5000", "", "2001:db8:1:3::/64"},
		{"[::ffff:192.0.2.7]:5000", "", "::ffff:192.0.2.7"},
		{"[fe80::1%eth0]:5000", "", "fe80::/64"},
		{"10.0.0.1:5000", "2001:db8:9:9::1, 10.0.0.1", "2001:db8:9:9::/64"},
		{"10.0.0.1:5000", "not-an-ip", "not-an-ip"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.remote
		header := ""
		if tc.header != "" {
			header = "X-Forwarded-For"
			r.Header.Set(header, tc.header)
		}
		if got := ClientKey(r, header); got != tc.want {
			t.Errorf("%s %q: key %q, want %q", tc.remote, tc.header, got, tc.want)
		}
	}
}
