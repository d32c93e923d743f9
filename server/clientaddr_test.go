package server

import (
	"net/http"
	"testing"
)

func TestClientAddr(t *testing.T) {
	trusted, err := ParseTrustedProxies([]string{"10.0.0.0/8, 192.0.2.7", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{trusted: trusted}
	none := &Server{}
	for _, tc := range []struct {
		name, remote string
		xff          []string
		srv          *Server
		want         string
	}{
		{"no proxies trusted: the peer, whatever the header says", "203.0.113.5:4000", []string{"198.51.100.1"}, none, "203.0.113.5"},
		{"an untrusted peer cannot choose its address", "203.0.113.5:4000", []string{"198.51.100.1"}, s, "203.0.113.5"},
		{"a trusted proxy names the client", "10.1.2.3:4000", []string{"198.51.100.1"}, s, "198.51.100.1"},
		{"a trusted single address", "192.0.2.7:4000", []string{"198.51.100.1"}, s, "198.51.100.1"},
		{"a chain of trusted proxies", "10.1.2.3:4000", []string{"198.51.100.1, 10.9.9.9"}, s, "198.51.100.1"},
		{"entries the client forged before the first trusted hop are ignored", "10.1.2.3:4000", []string{"1.1.1.1, 198.51.100.1"}, s, "198.51.100.1"},
		{"several header lines are one list", "10.1.2.3:4000", []string{"1.1.1.1", "198.51.100.1"}, s, "198.51.100.1"},
		{"a trusted proxy without the header: the proxy", "10.1.2.3:4000", nil, s, "10.1.2.3"},
		{"garbage stops the walk", "10.1.2.3:4000", []string{"198.51.100.1, nonsense"}, s, "10.1.2.3"},
		{"all hops trusted: the farthest", "10.1.2.3:4000", []string{"10.4.4.4, 10.5.5.5"}, s, "10.4.4.4"},
		{"IPv6", "[fd00::1]:4000", []string{"2001:db8::9"}, s, "2001:db8::9"},
		{"IPv4-mapped IPv6 peer", "[::ffff:10.1.2.3]:4000", []string{"198.51.100.1"}, s, "198.51.100.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &http.Request{RemoteAddr: tc.remote, Header: http.Header{}}
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := tc.srv.clientAddr(r); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := ParseTrustedProxies([]string{"10.0.0.0/33"}); err == nil {
		t.Error("10.0.0.0/33 was accepted")
	}
	if _, err := ParseTrustedProxies([]string{"proxy.example"}); err == nil {
		t.Error("a host name was accepted")
	}
}
