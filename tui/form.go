package tui

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
)

type fieldKind int

const (
	fieldText fieldKind = iota
	fieldNumber
	fieldChoice // one of choices
	fieldList   // a list of strings: add, edit, remove
	fieldFlags  // any of choices
)

type formField struct {
	key     string
	label   string
	help    string
	kind    fieldKind
	input   textinput.Model
	items   []string
	sel     int // list: the selected item, or -1 for the input line
	choices []string
	choice  int    // choice: the chosen one; flags: the one under the cursor
	flags   []bool // flags: one per choice
}

func (f *formField) value() string { return strings.TrimSpace(f.input.Value()) }

// clusterForm creates a cluster or edits one: identity, allowlists (list
// editing) and policy. An edit remembers the version and spec it started
// from, so that a concurrent change is detected on save and offered as
// reload-and-reapply instead of being overwritten.
type clusterForm struct {
	ctx     *Context
	fields  []*formField
	focus   int
	err     string
	note    string
	saving  bool
	discard bool // esc pressed once on a changed form
	// scroll is the first body line shown when the form is taller than the
	// screen (30 namespaces at 120x40): the focused line stays in view, and
	// the error and the key hints below the body always show.
	scroll int

	editing  *registry.Cluster // nil: a new cluster
	original registry.ClusterSpec
	version  int64
	initial  registry.ClusterSpec // what the form opened with, to detect changes
}

var (
	keyNextField = key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next field"))
	keyPrevField = key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous field"))
	keySave      = key.NewBinding(key.WithKeys("ctrl+s"), key.WithHelp("ctrl+s", "save"))
	keyAddItem   = key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "add item / next field"))
	keyDelItem   = key.NewBinding(key.WithKeys("delete", "backspace", "x"), key.WithHelp("del/x", "remove item"))
	keyUpField   = key.NewBinding(key.WithKeys("up"), key.WithHelp("↑", "previous field / item"))
	keyDownField = key.NewBinding(key.WithKeys("down"), key.WithHelp("↓", "next field / item"))
	keyToggle    = key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "toggle"))
	keyChoice    = key.NewBinding(key.WithKeys("left", "right"), key.WithHelp("←/→", "choose"))
)

// newClusterForm opens the form on spec. editing is the cluster being edited
// (nil for a new one); version is the version the edit is based on.
func newClusterForm(ctx *Context, spec registry.ClusterSpec, editing *registry.Cluster, version int64) *clusterForm {
	f := &clusterForm{ctx: ctx, editing: editing, version: version, initial: cloneSpec(spec)}
	if editing != nil {
		f.original = cloneSpec(editing.ClusterSpec)
	}
	text := func(k, label, help, v string, kind fieldKind) *formField {
		return &formField{key: k, label: label, help: help, kind: kind, input: newInput(ctx, v), sel: -1}
	}
	list := func(k, label, help string, items []string) *formField {
		fd := text(k, label, help, "", fieldList)
		fd.items = slices.Clone(items)
		fd.input.Placeholder = "type a value, enter to add (a, b, c adds three)"
		return fd
	}
	mode := &formField{key: "mode", label: "Mode", help: "how tether reaches the cluster", kind: fieldChoice,
		choices: []string{string(registry.ModePull), string(registry.ModePush), string(registry.ModeGitOps)}}
	mode.choice = max(0, slices.Index(mode.choices, string(spec.Mode)))
	caps := &formField{key: "capabilities", label: "Requires", help: "capabilities the agent must negotiate to register",
		kind: fieldFlags, choices: slices.Clone(registry.KnownCapabilities)}
	caps.flags = make([]bool, len(caps.choices))
	for i, c := range caps.choices {
		caps.flags[i] = slices.Contains(spec.Policy.RequiredCapabilities, c)
	}
	security := &formField{key: "security", label: "Security", help: "sign payloads (Ed25519), encrypt them to the public key (and seal them at rest), require mTLS",
		kind: fieldFlags, choices: securityChoices,
		flags: []bool{spec.Policy.RequireSignedPayloads, spec.Policy.RequireEncryptedPayloads, spec.Policy.RequireClientCertificate}}
	legacy := &formField{key: "legacysig", label: "Legacy sigs", help: "with signed payloads: also send the payload-only signature agents older than the bound form verify",
		kind: fieldFlags, choices: []string{"payload-only signatures for older agents"}, flags: []bool{spec.Policy.AllowLegacyPayloadSignatures}}
	pubKey := text("publickey", "Public key", "encryption key: a JWK on one line (X25519 or P-256); its agent sends one at register", string(spec.PublicKey), fieldText)
	pubKey.input.Placeholder = `{"kty":"OKP","crv":"X25519","x":"…"}`
	f.fields = []*formField{
		text("name", "Name", "display name, unique", spec.Name, fieldText),
		text("organization", "Organization", "owning organization", spec.Organization, fieldText),
		mode,
		list("namespaces", "Namespaces", "allowed namespaces; * allows all (and cluster-scoped objects)", spec.AllowedNamespaces),
		list("catalog", "Catalog entries", "allowed catalog ids; * allows all", spec.AllowedCatalogEntries),
		list("templates", "Op templates", "allowed operation templates, e.g. backup.velero; * allows all", spec.AllowedOperationTemplates),
		text("lease", "Lease seconds", fmt.Sprintf("0: never reclaimed; else %d-%d", registry.MinLeaseSeconds, registry.MaxLeaseSeconds),
			strconv.Itoa(spec.Policy.LeaseSeconds), fieldNumber),
		text("attempts", "Max attempts", fmt.Sprintf("1-%d; a lease expiring on the last one fails the job", registry.MaxMaxAttempts),
			strconv.Itoa(spec.Policy.MaxAttempts), fieldNumber),
		caps,
		security,
		legacy,
		pubKey,
	}
	if editing == nil {
		f.fields = append(f.fields, text("ttl", "Token valid for", "the first registration token's lifetime (1m to 168h)",
			shortDuration(registry.DefaultTokenTTL), fieldText))
	}
	f.focusField(0)
	return f
}

// securityChoices are the Security field's flags, in the order of the
// policy toggles they set.
var securityChoices = []string{"signed payloads", "encrypted payloads", "mTLS"}

// shortDuration is a duration without its zero tail: 24h, not 24h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func cloneSpec(s registry.ClusterSpec) registry.ClusterSpec {
	s.AllowedNamespaces = slices.Clone(s.AllowedNamespaces)
	s.AllowedCatalogEntries = slices.Clone(s.AllowedCatalogEntries)
	s.AllowedOperationTemplates = slices.Clone(s.AllowedOperationTemplates)
	s.Policy.RequiredCapabilities = slices.Clone(s.Policy.RequiredCapabilities)
	return s
}

func (f *clusterForm) field(k string) *formField {
	for _, fd := range f.fields {
		if fd.key == k {
			return fd
		}
	}
	return nil
}

func (f *clusterForm) focusField(i int) {
	for _, fd := range f.fields {
		fd.input.Blur()
	}
	f.focus = (i + len(f.fields)) % len(f.fields)
	fd := f.fields[f.focus]
	fd.sel = -1
	if fd.kind == fieldText || fd.kind == fieldNumber || fd.kind == fieldList {
		fd.input.Focus()
		fd.input.CursorEnd()
	}
}

// spec builds the spec the form describes. Values are checked by the
// registry when saved; only what cannot be expressed (a number that is not
// one) is refused here.
func (f *clusterForm) spec() (registry.ClusterSpec, time.Duration, error) {
	var s registry.ClusterSpec
	if f.editing != nil {
		s.Labels = f.original.Labels // not editable here; kept as they are
	}
	s.PublicKey = registry.AgentPublicKey(f.field("publickey").value())
	sec := f.field("security")
	s.Policy.RequireSignedPayloads, s.Policy.RequireEncryptedPayloads, s.Policy.RequireClientCertificate = sec.flags[0], sec.flags[1], sec.flags[2]
	s.Policy.AllowLegacyPayloadSignatures = f.field("legacysig").flags[0]
	s.Name = f.field("name").value()
	s.Organization = f.field("organization").value()
	m := f.field("mode")
	s.Mode = registry.ConnectivityMode(m.choices[m.choice])
	s.AllowedNamespaces = slices.Clone(f.field("namespaces").items)
	s.AllowedCatalogEntries = slices.Clone(f.field("catalog").items)
	s.AllowedOperationTemplates = slices.Clone(f.field("templates").items)
	for _, k := range []string{"namespaces", "catalog", "templates"} {
		if pending := f.field(k).value(); pending != "" {
			return s, 0, fmt.Errorf("%s: %q was typed but not added; press enter to add it or clear it", f.field(k).label, pending)
		}
	}
	num := func(k string) (int, error) {
		fd := f.field(k)
		n, err := strconv.Atoi(fd.value())
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not a whole number", fd.label, fd.value())
		}
		return n, nil
	}
	var err error
	if s.Policy.LeaseSeconds, err = num("lease"); err != nil {
		return s, 0, err
	}
	if s.Policy.MaxAttempts, err = num("attempts"); err != nil {
		return s, 0, err
	}
	caps := f.field("capabilities")
	s.Policy.RequiredCapabilities = []string{}
	for i, on := range caps.flags {
		if on {
			s.Policy.RequiredCapabilities = append(s.Policy.RequiredCapabilities, caps.choices[i])
		}
	}
	var ttl time.Duration
	if fd := f.field("ttl"); fd != nil {
		if ttl, err = time.ParseDuration(fd.value()); err != nil {
			return s, 0, fmt.Errorf("%s: %q is not a duration (write 24h, 90m or 168h)", fd.label, fd.value())
		}
	}
	return s, ttl, nil
}

func (f *clusterForm) changed() bool {
	s, _, err := f.spec()
	return err != nil || describeDiff(f.initial, s) != ""
}

func (f *clusterForm) Update(msg tea.Msg) (modal, tea.Cmd) {
	if r, ok := msg.(formRefusedMsg); ok && r.form == f {
		f.saving, f.err = false, errText(r.err)
		return f, nil
	}
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return f, nil
	}
	if f.saving {
		return f, nil // the outcome decides what happens next
	}
	fd := f.fields[f.focus]
	if !key.Matches(k, keyCancel) {
		f.discard = false
	}
	switch {
	case key.Matches(k, keyCancel):
		if fd.kind == fieldList && fd.sel >= 0 {
			fd.sel = -1
			return f, nil
		}
		if f.changed() && !f.discard {
			f.discard = true
			f.err = "unsaved changes: esc again to discard them, ctrl+s to save"
			return f, nil
		}
		return nil, info("canceled: nothing changed")
	case key.Matches(k, keySave):
		return f, f.save()
	case key.Matches(k, keyNextField):
		f.focusField(f.focus + 1)
		return f, nil
	case key.Matches(k, keyPrevField):
		f.focusField(f.focus - 1)
		return f, nil
	}
	switch fd.kind {
	case fieldList:
		return f, f.updateList(fd, k)
	case fieldChoice:
		switch k.String() {
		case "left", "h":
			fd.choice = (fd.choice + len(fd.choices) - 1) % len(fd.choices)
		case "right", "l", "space":
			fd.choice = (fd.choice + 1) % len(fd.choices)
		case "up":
			f.focusField(f.focus - 1)
		case "down", "enter":
			f.focusField(f.focus + 1)
		}
		return f, nil
	case fieldFlags:
		switch k.String() {
		case "left", "h":
			fd.choice = max(0, fd.choice-1)
		case "right", "l":
			fd.choice = min(len(fd.choices)-1, fd.choice+1)
		case "space", "x":
			fd.flags[fd.choice] = !fd.flags[fd.choice]
		case "up":
			f.focusField(f.focus - 1)
		case "down", "enter":
			f.focusField(f.focus + 1)
		}
		return f, nil
	}
	switch {
	case key.Matches(k, keyUpField):
		f.focusField(f.focus - 1)
		return f, nil
	case key.Matches(k, keyDownField), key.Matches(k, keyAddItem):
		f.focusField(f.focus + 1)
		return f, nil
	}
	var cmd tea.Cmd
	fd.input, cmd = fd.input.Update(msg)
	f.err = ""
	return f, cmd
}

// updateList edits a list field: the input line adds items, the arrows
// select one, delete removes it, enter on it takes it back for editing.
func (f *clusterForm) updateList(fd *formField, k tea.KeyPressMsg) tea.Cmd {
	if fd.sel >= 0 {
		switch {
		case key.Matches(k, keyUpField):
			fd.sel = max(0, fd.sel-1)
		case key.Matches(k, keyDownField):
			fd.sel++
			if fd.sel >= len(fd.items) {
				fd.sel = -1
				fd.input.Focus()
			}
		case key.Matches(k, keyDelItem):
			fd.items = slices.Delete(fd.items, fd.sel, fd.sel+1)
			if fd.sel >= len(fd.items) {
				fd.sel = len(fd.items) - 1
			}
			if fd.sel < 0 {
				fd.input.Focus()
			}
		case k.String() == "enter" || k.String() == "e":
			v := fd.items[fd.sel]
			fd.items = slices.Delete(fd.items, fd.sel, fd.sel+1)
			fd.sel = -1
			fd.input.SetValue(v)
			fd.input.Focus()
			fd.input.CursorEnd()
		}
		return nil
	}
	switch {
	case key.Matches(k, keyUpField):
		if len(fd.items) > 0 {
			fd.sel = len(fd.items) - 1
			fd.input.Blur()
		} else {
			f.focusField(f.focus - 1)
		}
		return nil
	case key.Matches(k, keyDownField):
		f.focusField(f.focus + 1)
		return nil
	case k.String() == "enter":
		v := fd.value()
		if v == "" {
			f.focusField(f.focus + 1)
			return nil
		}
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" && !slices.Contains(fd.items, item) {
				fd.items = append(fd.items, item)
			}
		}
		fd.input.SetValue("")
		f.err = ""
		return nil
	}
	var cmd tea.Cmd
	fd.input, cmd = fd.input.Update(k)
	f.err = ""
	return cmd
}

func (f *clusterForm) save() tea.Cmd {
	spec, ttl, err := f.spec()
	if err != nil {
		f.err = err.Error()
		return nil
	}
	f.saving, f.err = true, ""
	b := f.ctx.Backend
	if f.editing == nil {
		return runAction("create cluster "+spec.Name, func(ctx context.Context) outcome {
			c, tok, err := b.CreateCluster(ctx, spec, ttl)
			if err != nil {
				return outcome{err: err, then: f.reopen(err)}
			}
			return outcome{
				ok:   "created cluster " + c.Name + " (" + c.ID + "); its registration token is shown once",
				then: []tea.Msg{showTokenMsg{cluster: c, token: tok}},
			}
		})
	}
	id, version, original := f.editing.ID, f.version, f.original
	return runAction("save cluster "+spec.Name, func(ctx context.Context) outcome {
		c, err := b.UpdateCluster(ctx, id, version, spec)
		if registry.ErrorCode(err) == registry.CodeConflict {
			return outcome{err: err, then: []tea.Msg{conflictMsg{cluster: f.editing, original: original, mine: spec}}}
		}
		if err != nil {
			return outcome{err: err, then: f.reopen(err)}
		}
		diff := describeDiff(original, spec)
		if diff == "" {
			diff = "no change"
		}
		return outcome{ok: fmt.Sprintf("saved cluster %s (version %d): %s", c.Name, c.Version, diff),
			then: []tea.Msg{closeModalMsg{f}}}
	})
}

// reopen keeps the form open after a refused save, with the registry's
// message (which names the field and the rule).
func (f *clusterForm) reopen(err error) []tea.Msg { return []tea.Msg{formRefusedMsg{f, err}} }

// formRefusedMsg: the registry refused form's save with err.
type formRefusedMsg struct {
	form *clusterForm
	err  error
}
