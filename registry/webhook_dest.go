package registry

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// Where webhooks may go. A webhook is a request tether makes on behalf of
// whoever created it, organization-scoped admins included: aimed inward, at
// a cloud's metadata service (169.254.169.254), a database on the private
// network or tether's own admin API on 127.0.0.1, it would reach what those
// admins cannot, and its failures would tell them which ports are open. So
// internal destinations are refused unless the operator allows their range
// (serve --webhook-allow-cidr, for receivers on premises). The rule is
// checked twice: on the URL's host when a webhook is created (a literal
// address, or a name that always means this machine), and on the address
// each connection actually goes to (the sender's dialer), because a name can
// resolve to anything, and to something else tomorrow (DNS rebinding).

// internalRanges are the destinations refused unless allowed, by kind.
var internalRanges = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	// 0.0.0.0 reaches this machine on Linux; the rest of 0/8 is "this
	// network".
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"}, // cloud metadata services
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	// Shared address space: carrier-grade NAT, many clouds' internal
	// networks, and Alibaba Cloud's metadata service (100.100.100.200).
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (carrier-grade NAT)"},
	{netip.MustParsePrefix("fc00::/7"), "unique-local"}, // AWS's IPv6 metadata service (fd00:ec2::254) too
}

// webhookAllowHint is how every refusal ends: what the rule is and how an
// operator with a receiver on premises lifts it.
const webhookAllowHint = "tether does not send webhooks to loopback, link-local, private, shared, unique-local or unspecified addresses unless tether serve --webhook-allow-cidr allows the range"

// ForbiddenDestination is why a webhook may not be sent to an address.
// Its message names the kind of range, not the address: it is recorded
// where organization-scoped admins read it, and an address a name resolved
// to is not theirs to learn.
type ForbiddenDestination struct {
	Addr   netip.Addr
	Kind   string // loopback, link-local, ...
	Prefix netip.Prefix
}

func (e *ForbiddenDestination) Error() string {
	return fmt.Sprintf("the receiver is at %s %s address (%s); %s", article(e.Kind), e.Kind, e.Prefix, webhookAllowHint)
}

func article(kind string) string {
	if kind == "unspecified" {
		return "an"
	}
	return "a"
}

// ParseWebhookAllow reads --webhook-allow-cidr.
func ParseWebhookAllow(list []string) ([]netip.Prefix, error) { return ParseAddressRanges(list) }

// ParseAddressRanges reads a flag's list of address ranges (the webhook
// allow list, trusted proxies): CIDR prefixes or single addresses, each
// item possibly a comma-separated list. An IPv4 address written as IPv6 is
// the IPv4 one; a zone (fe80::1%eth0) is refused, as no prefix holds one.
func ParseAddressRanges(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range list {
		for _, s := range strings.Split(item, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			if p, err := netip.ParsePrefix(s); err == nil {
				out = append(out, p.Masked())
				continue
			}
			a, err := netip.ParseAddr(s)
			if err != nil || a.Zone() != "" {
				return nil, fmt.Errorf("%q is not a CIDR prefix (10.0.0.0/8) or an address", s)
			}
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return out, nil
}

// CheckWebhookDestination says whether a webhook may be sent to ip: nil,
// or a *ForbiddenDestination. The sender asks it for every connection.
func (r *Registry) CheckWebhookDestination(ip netip.Addr) error {
	// A zone would make every prefix miss (fe80::1%eth0), and an
	// IPv4-mapped address (::ffff:127.0.0.1) is the IPv4 one.
	ip = ip.WithZone("").Unmap()
	if v4, ok := embeddedIPv4(ip); ok {
		// NAT64 and 6to4 addresses reach the IPv4 address they carry
		// (64:ff9b::a9fe:a9fe is 169.254.169.254 through a NAT64
		// gateway): that address is the destination to judge.
		if err := r.CheckWebhookDestination(v4); err != nil {
			return err
		}
	}
	for _, p := range r.cfg.WebhookAllow {
		if p.Contains(ip) {
			return nil
		}
	}
	for _, rg := range internalRanges {
		if rg.prefix.Contains(ip) {
			return &ForbiddenDestination{Addr: ip, Kind: rg.kind, Prefix: rg.prefix}
		}
	}
	return nil
}

// Prefixes whose addresses carry an IPv4 address: where, in bytes.
var (
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")   // RFC 6052: the last 4 bytes
	nat64Local     = netip.MustParsePrefix("64:ff9b:1::/48") // RFC 8215: the last 4 bytes
	sixToFour      = netip.MustParsePrefix("2002::/16")      // RFC 3056: bytes 2 to 5
	ipv4Compatible = netip.MustParsePrefix("::/96")          // deprecated ::a.b.c.d: the last 4 bytes
)

// embeddedIPv4 is the IPv4 address an IPv6 address of NAT64, 6to4 or the
// deprecated IPv4-compatible form carries.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	if !ip.Is6() {
		return netip.Addr{}, false
	}
	b := ip.As16()
	switch {
	case nat64WellKnown.Contains(ip), nat64Local.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	case ipv4Compatible.Contains(ip) && ip != netip.IPv6Unspecified() && ip != netip.IPv6Loopback():
		return netip.AddrFrom4([4]byte(b[12:16])), true
	}
	return netip.Addr{}, false
}

// checkWebhookHost applies the rule to a URL's host when a webhook is
// created: a literal address, in any spelling, or a name that means this
// machine. Other names are checked when they are resolved, at each
// connection.
func (r *Registry) checkWebhookHost(u *url.URL) error {
	host := u.Hostname()
	if a, err := idna.Lookup.ToASCII(host); err == nil {
		// What net/http dials: it maps a host that is not ASCII through
		// IDNA first, so 127。0。0。1 (ideographic full stops) or
		// ｌｏｃａｌｈｏｓｔ (full width) is 127.0.0.1 or localhost.
		host = a
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if isLocalhostName(host) {
		for _, loop := range []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()} {
			if r.CheckWebhookDestination(loop) == nil {
				return nil
			}
		}
		return Errorf(CodeInvalid, "webhook URL host %q names this machine (a loopback address): %s (127.0.0.0/8, ::1)", host, webhookAllowHint)
	}
	ip, numeric, err := parseHostAddr(host)
	if !numeric {
		return nil
	}
	if err != nil {
		return err
	}
	if e := r.CheckWebhookDestination(ip); e != nil {
		fd := e.(*ForbiddenDestination)
		return Errorf(CodeInvalid, "webhook URL host %s is %s %s address (%s): %s", ip, article(fd.Kind), fd.Kind, fd.Prefix, webhookAllowHint)
	}
	return nil
}

// isLocalhostName reports the names resolvers answer with a loopback
// address without asking DNS (RFC 6761, and Go's and systemd's resolvers).
func isLocalhostName(host string) bool {
	for _, n := range []string{"localhost", "localhost.localdomain"} {
		if host == n || strings.HasSuffix(host, "."+n) {
			return true
		}
	}
	return false
}

// parseHostAddr reads a URL host that is an address. numeric is false for a
// host name. An IPv4 address must be written canonically, as four decimal
// numbers: resolvers also accept 0x7f000001, 2130706433, 127.1 or
// 0177.0.0.1 (inet_aton's forms), which net/netip does not read, so they
// would slip past a check of literal addresses. As in browsers' URL
// parsing, a host whose last label is a number is an IPv4 address.
func parseHostAddr(host string) (ip netip.Addr, numeric bool, err error) {
	if strings.Contains(host, ":") {
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return ip, true, Errorf(CodeInvalid, "webhook URL host %q is not a valid IPv6 address", host)
		}
		return ip, true, nil
	}
	labels := strings.Split(host, ".")
	if !isIPv4Number(labels[len(labels)-1]) {
		return netip.Addr{}, false, nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Is4() {
		return ip, true, nil
	}
	if ip, ok := parseLooseIPv4(labels); ok {
		return ip, true, Errorf(CodeInvalid, "webhook URL host %q is the IPv4 address %s written unusually; write it as four decimal numbers (%s)", host, ip, ip)
	}
	return netip.Addr{}, true, Errorf(CodeInvalid, "webhook URL host %q is neither a host name nor an IPv4 address", host)
}

// isIPv4Number reports whether a host label reads as a number: decimal,
// or hexadecimal after 0x.
func isIPv4Number(s string) bool {
	if t, ok := strings.CutPrefix(s, "0x"); ok {
		s = t
		for _, c := range s {
			if !strings.ContainsRune("0123456789abcdef", c) {
				return false
			}
		}
		return true
	}
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseLooseIPv4 reads an IPv4 address as inet_aton does: one to four
// numbers, each decimal, octal (leading 0) or hexadecimal (0x), the last
// filling the bytes the others left.
func parseLooseIPv4(labels []string) (netip.Addr, bool) {
	if len(labels) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, s := range labels {
		base := 10
		switch {
		case strings.HasPrefix(s, "0x"):
			s, base = s[2:], 16
			if s == "" {
				s = "0"
			}
		case len(s) > 1 && s[0] == '0':
			s, base = s[1:], 8
		}
		n, err := strconv.ParseUint(s, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		if i < len(labels)-1 {
			if n > 255 {
				return netip.Addr{}, false
			}
			v |= n << (24 - 8*i)
			continue
		}
		if rest := 8 * (4 - i); n >= 1<<rest {
			return netip.Addr{}, false
		}
		v |= n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// WebhookURLOrigin is what of a webhook's URL may be shown beyond the
// webhook itself (the audit trail, logs): scheme, host and port. The path
// and query often carry the receiver's own secret (Slack-style paths,
// ?token=).
func WebhookURLOrigin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "(not a URL)"
	}
	return u.Scheme + "://" + u.Host
}

// webhookURLShown is a webhook's URL as the audit trail records it: its
// origin, and "/…" where a path or query was left out. Nothing derived from
// the rest is shown either: a hash of a URL whose secret is short (?token=1234)
// can be reversed by guessing, and the webhook's id already tells webhooks
// apart.
func webhookURLShown(raw string) string {
	origin := WebhookURLOrigin(raw)
	if u, err := url.Parse(raw); err == nil && (strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "") {
		return origin + "/…"
	}
	return origin
}

// redactWebhookAudit rewrites the URL in an audit entry of a webhook's
// creation written before entries held only its origin
// ("NAME → URL for EVENTS"), so that readers of the audit trail, viewers
// included, no longer see its path and query.
func redactWebhookAudit(e *AuditEntry) {
	if e.Action != "webhook.create" {
		return
	}
	name, rest, ok := strings.Cut(e.Reason, " → ")
	if !ok {
		return
	}
	raw, events, ok := strings.Cut(rest, " for ")
	if !ok {
		return
	}
	if origin, _, found := strings.Cut(raw, " (URL fingerprint "); found {
		// Written while entries held a fingerprint of the URL.
		e.Reason = name + " → " + origin + "/… for " + events
		return
	}
	if strings.ContainsAny(raw, " ") || !strings.Contains(raw, "://") {
		return
	}
	e.Reason = name + " → " + webhookURLShown(raw) + " for " + events
}
