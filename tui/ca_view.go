package tui

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// caView is tether's CA (`:ca`): what `tether ca show` prints, read from its
// certificate, and, when there is none, i to create one (`tether ca init`).
type caView struct {
	ctx     *Context
	pager   pager
	cas     []registry.CertificateAuthority
	err     error
	loaded  bool
	version int
	drawn   string
	width   int
	height  int
}

var keyCAInit = key.NewBinding(key.WithKeys("i"), key.WithHelp("i", "create the CA"))

func newCAView(ctx *Context) *caView { return &caView{ctx: ctx, pager: newPager()} }

// caMsg is the CAs as read.
type caMsg struct {
	view *caView
	cas  []registry.CertificateAuthority
	err  error
}

func (v *caView) load() tea.Cmd {
	b := v.ctx.Backend
	return func() tea.Msg {
		cas, err := b.CAs(context.Background())
		return caMsg{view: v, cas: cas, err: err}
	}
}

func (v *caView) Title() string { return "Certificate authority" }

func (v *caView) SetSize(w, h int) {
	v.width, v.height = w, h
	v.pager.setSize(w, h)
}

func (v *caView) hasCA() bool { return len(v.cas) > 0 && v.cas[0].RetiredAt.IsZero() }

// caChangedMsg: tether's CA was created; the CA view reads it again.
type caChangedMsg struct{}

func (v *caView) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case caChangedMsg:
		return v.load()
	case caMsg:
		if msg.view == v {
			v.loaded, v.err = true, msg.err
			if msg.err == nil {
				v.cas = msg.cas
			}
			v.version++
		}
	case themeChangedMsg:
		v.drawn = ""
	case tea.MouseWheelMsg:
		v.pager.wheel(msg)
	case tea.KeyPressMsg:
		if v.pager.navigate(msg, v.ctx.Keys) {
			return nil
		}
		if key.Matches(msg, keyCAInit) && v.loaded && v.err == nil && !v.hasCA() {
			return v.confirmInit()
		}
	}
	return nil
}

// confirmInit asks before creating the CA: it cannot be taken back (only
// replaced, from the CLI).
func (v *caView) confirmInit() tea.Cmd {
	if !canAdmin(v.ctx) {
		return failed("only an admin may create tether's CA; this console may not (ask an admin to run tether ca init)")
	}
	b := v.ctx.Backend
	body := "tether creates an ECDSA P-256 key and a self-signed certificate valid 5 years, which may only issue client certificates naming spiffe://tether/… identities. " +
		"Its private key is sealed with the key file and kept in the database. From then on an agent that sends a CSR at register or rotation gets a client certificate, " +
		"and the server verifies client certificates against it. Only the CLI can replace it later (tether ca init --replace)."
	return v.ctx.showModal(newConfirm(v.ctx, "Create tether's CA?", body, "create", false, runAction("create the CA", func(cx context.Context) outcome {
		ca, err := b.InitCA(cx, false)
		if err != nil {
			return outcome{err: err}
		}
		return outcome{ok: "created tether's CA " + ca.ID + ", valid until " + stamp(ca.NotAfter),
			then: []tea.Msg{caChangedMsg{}}}
	})))
}

func (v *caView) View() string {
	if in := fmt.Sprint(v.version, v.ctx.Now.Unix(), v.width); in != v.drawn {
		v.pager.setContent(v.render())
		v.drawn = in
	}
	return v.pager.view()
}

func (v *caView) render() string {
	st := v.ctx.Styles
	now := v.ctx.Now
	var b strings.Builder
	line := func(s string) { b.WriteString(truncate(s, v.width) + "\n") }
	field := func(label, value string, k themes.Kind) {
		line("  " + st.Render(themes.Muted, pad(label, 21)) + st.Render(k, value))
	}
	switch {
	case v.err != nil:
		line("  " + st.Render(themes.Danger, "could not read tether's CA: "+errText(v.err)))
	case !v.loaded:
		line("  " + st.Render(themes.Muted, "loading…"))
	case !v.hasCA():
		line(st.Section.Render("NO CERTIFICATE AUTHORITY"))
		line("  " + st.Render(themes.Plain, "tether has no CA: agents cannot get client certificates (a CSR at register"))
		line("  " + st.Render(themes.Plain, "or rotation is refused), and mTLS rests on --tls-client-ca alone."))
		if canAdmin(v.ctx) {
			line("  " + st.Render(themes.Plain, "i creates one, as tether ca init does."))
		} else {
			line("  " + st.Render(themes.Muted, "An admin creates one with tether ca init."))
		}
	}
	for i, ca := range v.cas {
		if i == 0 && ca.RetiredAt.IsZero() {
			line(st.Section.Render("CURRENT CA"))
		} else {
			line("")
			line(st.Section.Render("REPLACED, STILL TRUSTED"))
		}
		field("id", ca.ID, themes.Plain)
		cert, err := x509.ParseCertificate(ca.CertDER)
		if err != nil {
			field("certificate", "cannot be read: "+err.Error(), themes.Danger)
			continue
		}
		field("subject", cert.Subject.String(), themes.Plain)
		field("key", keyAlgorithm(cert), themes.Plain)
		field("not before", stamp(cert.NotBefore), themes.Plain)
		k := themes.Plain
		if now.Add(30 * 24 * time.Hour).After(cert.NotAfter) {
			k = themes.Warning // replace it before agents' certificates stop being issued
		}
		field("not after", stamp(cert.NotAfter)+" ("+until(now, cert.NotAfter)+")", k)
		fp := fingerprint(cert.Raw)
		field("SHA-256", fp[:47], themes.Plain)
		field("", fp[48:], themes.Plain)
		if !ca.RetiredAt.IsZero() {
			field("replaced", stamp(ca.RetiredAt), themes.Muted)
			field("trusted until", stamp(ca.TrustedUntil)+" (its last certificate expires)", themes.Warning)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// fingerprint is the certificate's SHA-256 as colon-separated hex, as
// openssl x509 -fingerprint -sha256 prints it.
func fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	parts := make([]string, len(sum))
	for i, c := range sum {
		parts[i] = fmt.Sprintf("%02X", c)
	}
	return strings.Join(parts, ":")
}

func keyAlgorithm(cert *x509.Certificate) string {
	switch k := cert.PublicKey.(type) {
	case *ecdsa.PublicKey:
		return "ECDSA " + k.Curve.Params().Name
	case ed25519.PublicKey:
		return "Ed25519"
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA %d bits", k.N.BitLen())
	}
	return cert.PublicKeyAlgorithm.String()
}

func (v *caView) Actions() []key.Binding { return []key.Binding{keyCAInit} }

func (v *caView) KeyMap() help.KeyMap {
	k := v.ctx.Keys
	var acts []key.Binding
	if v.loaded && v.err == nil && !v.hasCA() && canAdmin(v.ctx) {
		acts = append(acts, keyCAInit)
	}
	full := [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Back}}
	if len(acts) > 0 {
		full = append(full, acts)
	}
	return keyMap{short: append(append([]key.Binding{k.Back}, acts...), k.Help), full: full}
}

// caState is whether tether has a CA, as a cluster's SECURITY section says.
type caState struct {
	id       string
	notAfter time.Time
	err      error
}

// readCAState reads it; a failure is shown in its place, not the detail's.
func readCAState(ctx context.Context, b Backend) caState {
	cas, err := b.CAs(ctx)
	if err != nil {
		return caState{err: err}
	}
	if len(cas) == 0 || !cas[0].RetiredAt.IsZero() {
		return caState{}
	}
	return caState{id: cas[0].ID, notAfter: cas[0].NotAfter}
}

func (s caState) posture() posture {
	switch {
	case s.err != nil:
		return posture{"tether's CA", "could not read: " + errText(s.err), themes.Warning}
	case s.id == "":
		return posture{"tether's CA", "none: agents get no client certificates (:ca, or tether ca init)", themes.Muted}
	}
	return posture{"tether's CA", s.id + " · valid until " + stamp(s.notAfter) + " (:ca)", themes.Plain}
}

// certLine is a credential's client certificate, under the credential:
// the serial's first 8 hex digits (enough to tell certificates apart), its
// expiry and the CA that issued it.
func certLine(st *themes.Styles, cc *registry.ClientCertificate) string {
	serial := cc.Serial
	if len(serial) > 8 {
		serial = serial[:8] + "…"
	}
	return "    " + st.Render(themes.Muted, "└ ") + st.Render(themes.Plain, "client certificate "+serial+" · cert until "+cc.NotAfter.UTC().Format("2006-01-02")) +
		st.Render(themes.Muted, " · issued by "+cc.CAID)
}
