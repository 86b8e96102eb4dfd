package ratelimit

import (
	"net"
	"net/http"
	"strings"
)

// ClientIP is the first value of header when a trusted gateway sets it
// (header != ""), else the peer address of r.
func ClientIP(r *http.Request, header string) string {
	if header != "" {
		if v := strings.TrimSpace(strings.Split(r.Header.Get(header), ",")[0]); v != "" {
			return v
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
