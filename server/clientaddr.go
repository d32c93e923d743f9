package server

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/tetherhq/tether/registry"
)

// ParseTrustedProxies reads --trusted-proxies: CIDR prefixes (10.0.0.0/8,
// fd00::/8) or single addresses (192.0.2.10), separated by commas. It reads
// them as every list of address ranges is read (registry.ParseAddressRanges).
func ParseTrustedProxies(list []string) ([]netip.Prefix, error) {
	return registry.ParseAddressRanges(list)
}

// clientAddr is the address of the client that made r, for per-address
// limits, the audit trail of registrations and the request log. It is the
// connection's peer, unless that peer is one of Config.TrustedProxies: then
// X-Forwarded-For is read from the right (the entry the nearest proxy
// appended) and the first address that is not itself a trusted proxy is the
// client. A client cannot choose its address by sending X-Forwarded-For
// itself: only entries appended by trusted proxies are believed.
func (s *Server) clientAddr(r *http.Request) string {
	peer := remoteHost(r.RemoteAddr)
	if len(s.trusted) == 0 || !s.isTrusted(peer) {
		return peer
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(h, ",")...)
	}
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		if _, err := netip.ParseAddr(remoteHost(hop)); err != nil {
			break // garbage from beyond the trusted proxies: stop believing
		}
		client = remoteHost(hop)
		if !s.isTrusted(client) {
			break
		}
	}
	return client
}

// isTrusted reports whether host (an address without a port) is one of the
// trusted proxies.
func (s *Server) isTrusted(host string) bool {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range s.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// remoteHost strips the port (and an IPv6 zone's brackets) from an address.
func remoteHost(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
}
