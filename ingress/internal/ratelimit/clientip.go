package ratelimit

import (
	"net"
	"net/http"
	"net/netip"
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

// ClientKey is what per-client limits count a request against: the
// client's IPv4 address, or the /64 network of an IPv6 address, as one
// subscriber commonly holds a whole /64 and could otherwise take a new
// bucket with each address. A value that is not an IP address counts as
// itself.
func ClientKey(r *http.Request, header string) string {
	ip := ClientIP(r, header)
	addr, err := netip.ParseAddr(ip)
	if err != nil || addr.Unmap().Is4() {
		return ip
	}
	prefix, err := addr.WithZone("").Prefix(64)
	if err != nil {
		return ip
	}
	return prefix.String()
}
