package registry

import (
	"net/netip"
	"strings"
	"testing"
)

// A webhook URL's host, read as resolvers read it: a name, a canonical
// address, or an IPv4 address in one of inet_aton's other spellings, which
// is refused with its canonical form.
func TestParseHostAddr(t *testing.T) {
	for _, tc := range []struct {
		host    string
		numeric bool
		addr    string // the address read, or the canonical form a refusal names
		refused bool
	}{
		{"hooks.example.com", false, "", false},
		{"db.internal", false, "", false},
		{"1e100.net", false, "", false},
		{"93.184.215.14", true, "93.184.215.14", false},
		{"::1", true, "::1", false},
		{"::ffff:7f00:1", true, "::ffff:127.0.0.1", false},
		{"0x7f000001", true, "127.0.0.1", true},
		{"2130706433", true, "127.0.0.1", true},
		{"127.1", true, "127.0.0.1", true},
		{"0177.0.0.1", true, "127.0.0.1", true},
		{"127.000.0.1", true, "127.0.0.1", true},
		{"0x7f.0x0.0.0x1", true, "127.0.0.1", true},
		{"10.0x10203", true, "10.1.2.3", true},
		{"0", true, "0.0.0.0", true},
		{"0x", true, "0.0.0.0", true},
		{"example.123", true, "", true},
		{"256.0.0.1", true, "", true},
		{"1.2.3.4.5", true, "", true},
		{"1.2.65536", true, "", true},
		{"08.0.0.1", true, "", true}, // not octal
		{"4294967296", true, "", true},
	} {
		ip, numeric, err := parseHostAddr(tc.host)
		if numeric != tc.numeric || (err != nil) != tc.refused {
			t.Errorf("%s: numeric %v, err %v; want numeric %v, refused %v", tc.host, numeric, err, tc.numeric, tc.refused)
			continue
		}
		switch {
		case tc.addr == "":
		case !tc.refused && ip != netip.MustParseAddr(tc.addr):
			t.Errorf("%s: read %s, want %s", tc.host, ip, tc.addr)
		case tc.refused && !strings.Contains(err.Error(), "four decimal numbers ("+tc.addr+")"):
			t.Errorf("%s: refused with %q, want the canonical %s", tc.host, err, tc.addr)
		}
	}
}

func TestParseWebhookAllow(t *testing.T) {
	got, err := ParseWebhookAllow([]string{"10.20.0.0/16, 192.168.7.12", "", "fd00::1/64", "::ffff:10.1.1.1"})
	want := []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16"), netip.MustParsePrefix("192.168.7.12/32"), netip.MustParsePrefix("fd00::/64"), netip.MustParsePrefix("10.1.1.1/32")}
	if err != nil || len(got) != len(want) {
		t.Fatalf("got %v, %v; want %v", got, err, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("[%d] = %s, want %s", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "everywhere", "fe80::1%eth0"} {
		if _, err := ParseWebhookAllow([]string{bad}); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}
