package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/internal/display"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// clusterDetail is one cluster: identity, allowlists, policy, heartbeat
// conditions (False ones highlighted), credentials, tokens, recent jobs and
// events. The cluster, its credentials and tokens come live from the fleet;
// recent jobs and events are read on open, then kept current from the feed.
type clusterDetail struct {
	ctx     *Context
	id      string
	pager   pager
	jobs    []registry.Job
	events  []registry.Event
	ca      caState // whether tether has a CA, for SECURITY (ca_view.go)
	err     error
	loaded  bool
	dirty   bool // a job of this cluster changed since the last read
	loading bool
	version int    // bumped when jobs or events change
	drawn   string // the inputs of the document the pager holds
	width   int
	height  int
}

const detailRecent = 8

var (
	keyClusterJobs   = key.NewBinding(key.WithKeys("J"), key.WithHelp("J", "its jobs"))
	keyClusterEvents = key.NewBinding(key.WithKeys("E"), key.WithHelp("E", "its events"))
)

func newClusterDetail(ctx *Context, id string) *clusterDetail {
	return &clusterDetail{ctx: ctx, id: id, pager: newPager()}
}

type clusterDetailMsg struct {
	id     string
	jobs   []registry.Job
	events []registry.Event
	ca     caState
	err    error
}

// clusterDetailRefreshMsg: time to re-read recent jobs if they changed.
type clusterDetailRefreshMsg struct{ id string }

func (d *clusterDetail) load() tea.Cmd {
	d.loading, d.dirty = true, false
	b, id := d.ctx.Backend, d.id
	return func() tea.Msg {
		ctx := context.Background()
		jobs, err := b.ListJobs(ctx, registry.JobListParams{ClusterIDs: []string{id}, Limit: detailRecent})
		if err != nil {
			return clusterDetailMsg{id: id, err: err}
		}
		events, err := b.ListEvents(ctx, registry.EventListParams{ClusterID: id, Limit: detailRecent})
		return clusterDetailMsg{id: id, jobs: jobs, events: events, ca: readCAState(ctx, b), err: err}
	}
}

func (d *clusterDetail) busy() bool { return d.loading || d.dirty }

func (d *clusterDetail) Title() string {
	if c := d.ctx.Fleet.cluster(d.id); c != nil {
		return c.Name
	}
	return d.id
}

func (d *clusterDetail) SetSize(w, h int) {
	d.width, d.height = w, h
	d.pager.setSize(w, h-1)
}

func (d *clusterDetail) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case clusterDetailMsg:
		if msg.id == d.id {
			d.loading, d.loaded, d.err = false, true, msg.err
			if msg.err == nil {
				d.jobs, d.events, d.ca = msg.jobs, msg.events, msg.ca
			}
			d.version++
			if d.dirty {
				return d.refreshLater()
			}
		}
	case clusterDetailRefreshMsg:
		if msg.id == d.id && d.dirty && !d.loading {
			return d.load()
		}
	case feedMsg:
		for _, j := range msg.batch.Jobs {
			if j.ClusterID == d.id {
				if !d.dirty && !d.loading {
					d.dirty = true
					return d.refreshLater()
				}
				d.dirty = true
			}
		}
		for _, e := range msg.batch.Events {
			if e.ClusterID == d.id {
				d.events = append([]registry.Event{e}, d.events...)
				if len(d.events) > detailRecent {
					d.events = d.events[:detailRecent]
				}
				d.version++
			}
		}
	case themeChangedMsg:
		d.drawn = ""
	case tea.MouseWheelMsg:
		d.pager.wheel(msg)
	case tea.KeyPressMsg:
		if d.pager.navigate(msg, d.ctx.Keys) {
			return nil
		}
		c := d.ctx.Fleet.cluster(d.id)
		if c == nil {
			return nil
		}
		if cmd, ok := drillCluster(d.ctx, c, msg); ok {
			return cmd
		}
		if key.Matches(msg, d.ctx.Keys.SubmitJob) {
			return d.ctx.showModal(newSubmitForm(d.ctx, c.Name))
		}
		return clusterAction(d.ctx, c, msg)
	}
	return nil
}

// drillCluster handles J (the cluster's jobs) and E (its events), from its
// detail and from the clusters list: a drill, which esc undoes.
func drillCluster(ctx *Context, c *registry.Cluster, msg tea.KeyPressMsg) (tea.Cmd, bool) {
	switch {
	case key.Matches(msg, keyClusterJobs):
		return ctx.switchTo(switchMsg{screen: screenJobs, filter: "cluster:" + c.Name, tab: "all", drill: true}), true
	case key.Matches(msg, keyClusterEvents):
		return ctx.switchTo(switchMsg{screen: screenEvents, filter: "cluster:" + c.Name, drill: true}), true
	}
	return nil, false
}

func (d *clusterDetail) refreshLater() tea.Cmd {
	id := d.id
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return clusterDetailRefreshMsg{id: id} })
}

func (d *clusterDetail) View() string {
	st := d.ctx.Styles
	c := d.ctx.Fleet.cluster(d.id)
	if c == nil {
		return pad(st.Title.Render("Cluster "+d.id), d.width) + "\n" +
			st.Render(themes.Warning, "  this cluster no longer exists (deleted?); esc goes back")
	}
	if in := fmt.Sprint(d.ctx.Fleet.version, d.ctx.Now.Unix(), d.version, d.width); in != d.drawn {
		d.pager.setContent(d.render(c))
		d.drawn = in
	}
	title := st.Title.Render(c.Name) + "  " + joinCell(st, clusterStateCell(c, d.ctx.Now))
	if d.ctx.Fleet.notDraining(c.ID) {
		title += st.Render(themes.Danger, " ⚠ not draining")
	}
	if info := d.pager.scrollInfo(); info != "" {
		title += st.Render(themes.Muted, "  "+info)
	}
	return pad(title, d.width) + "\n" + d.pager.view()
}

// joinCell renders a cell's segments.
func joinCell(st *themes.Styles, c cell) string {
	var b strings.Builder
	for _, s := range c {
		b.WriteString(st.Render(s.kind, s.text))
	}
	return b.String()
}

func (d *clusterDetail) render(c *registry.Cluster) string {
	st := d.ctx.Styles
	now := d.ctx.Now
	f := d.ctx.Fleet
	w := d.width
	var b strings.Builder
	line := func(s string) { b.WriteString(truncate(s, w) + "\n") }
	section := func(s string) { b.WriteString("\n" + st.Section.Render(s) + "\n") }
	// A value goes on under its label rather than being cut at the
	// screen's edge: at 80 columns "last heartbeat" lost why it matters
	// ("— silent: no heartbeat fo…") and "agent rotated" its warning.
	field := func(label, value string, k themes.Kind) {
		for i, l := range wrapLines(value, max(20, w-2-21), "/") {
			if i > 0 {
				label = ""
			}
			line("  " + st.Render(themes.Muted, pad(label, 21)) + st.Render(k, l))
		}
	}

	line(st.Render(themes.Muted, c.ID) + st.Render(themes.Muted, fmt.Sprintf(" · version %d · created %s", c.Version, stamp(c.CreatedAt))))
	hb := "never (no heartbeat yet)"
	hk := themes.Muted
	if !c.Status.LastHeartbeatAt.IsZero() {
		hb, hk = ago(now, c.Status.LastHeartbeatAt)+" ("+stamp(c.Status.LastHeartbeatAt)+")", themes.Plain
	}
	if c.Silent(now) {
		hk = themes.Warning
		hb += fmt.Sprintf(" — silent: no heartbeat for %d intervals", registry.SilentAfterHeartbeats)
	}
	section("IDENTITY")
	field("organization", orDash(c.Organization), themes.Plain)
	field("mode", string(c.Mode), themes.Plain)
	reg := "not yet: waiting for its agent to redeem a token"
	if !c.RegisteredAt.IsZero() {
		reg = stamp(c.RegisteredAt)
	}
	field("registered", reg, themes.Plain)
	field("last heartbeat", hb, hk)
	field("agent capabilities", listOrNone(c.Status.Capabilities), themes.Plain)
	if creds := f.creds[c.ID]; len(creds) > 0 {
		rotated, k := agentRotation(creds, now)
		field("agent rotated", rotated, k)
	}

	d.renderQueue(c, section, field)

	section("ALLOWLISTS")
	field("namespaces", listOrNone(c.AllowedNamespaces), themes.Plain)
	field("catalog entries", listOrNone(c.AllowedCatalogEntries), themes.Plain)
	field("operation templates", listOrNone(c.AllowedOperationTemplates), themes.Plain)

	section("POLICY")
	lease := fmt.Sprintf("%ds: a lease client's claim is reclaimed when its lease expires", c.Policy.LeaseSeconds)
	if c.Policy.LeaseSeconds == 0 {
		lease = "0: jobs are never reclaimed automatically"
	}
	field("lease", lease, themes.Plain)
	field("max attempts", fmt.Sprint(c.Policy.MaxAttempts), themes.Plain)
	field("requires", listOrNone(c.Policy.RequiredCapabilities), themes.Plain)

	section("SECURITY")
	for _, p := range securityPosture(c) {
		field(p.label, p.value, p.kind)
	}
	if d.loaded {
		p := d.ca.posture()
		field(p.label, p.value, p.kind)
	}

	section("CONDITIONS (from the last heartbeat)")
	if len(c.Status.Conditions) == 0 {
		line("  " + st.Render(themes.Muted, "none reported"))
	}
	for _, cond := range c.Status.Conditions {
		k := themes.Good
		if cond.Status == "False" {
			k = themes.Danger
		} else if cond.Status != "True" {
			k = themes.Warning
		}
		since := ""
		if !cond.LastTransitionTime.IsZero() {
			since = " · since " + ago(now, cond.LastTransitionTime)
		}
		line("  " + st.Render(k, pad(display.Safe(cond.Type), 20)+" "+pad(display.Safe(cond.Status), 8)) + st.Render(themes.Plain, display.Safe(strings.TrimSpace(cond.Reason+" "+cond.Message))) + st.Render(themes.Muted, since))
	}

	section("CREDENTIALS")
	if len(f.creds[c.ID]) == 0 {
		line("  " + st.Render(themes.Muted, "none: the agent has not registered"))
	}
	for _, cr := range f.creds[c.ID] {
		state := cr.State(now)
		k := themes.Muted
		var desc string
		switch state {
		case registry.CredentialActive:
			k = themes.Good
			desc = "expires " + until(now, cr.ExpiresAt) + " · rotate " + until(now, cr.RotateAfter)
			if !cr.RotateAfter.After(now) {
				k = themes.Warning
				desc = "rotation due; works until " + until(now, cr.ExpiresAt)
			}
		case registry.CredentialGrace:
			k = themes.Warning
			desc = "superseded " + ago(now, cr.SupersededAt) + "; works until " + until(now, cr.ExpiresAt)
		case registry.CredentialRotateOnly:
			k = themes.Warning
			desc = "may only rotate, until " + until(now, cr.RotateUntil)
		case registry.CredentialExpired:
			desc = "expired " + ago(now, cr.ExpiresAt)
		case registry.CredentialRevoked:
			k = themes.Danger
			desc = "revoked " + ago(now, cr.RevokedAt)
			if cr.RevokeReason != "" {
				desc += ": " + cr.RevokeReason
			}
		}
		rotated := "never"
		if at := cr.AgentRotatedAt(); !at.IsZero() {
			rotated = ago(now, at)
		}
		desc += " · agent rotated " + rotated
		writes := "unsigned writes"
		if cr.Signed() {
			writes = "signed writes"
		}
		// pad to the longest state (rotate_only) and a space: a state never
		// runs into its description.
		text := "  " + st.Render(themes.Muted, cr.ID) + "  " + st.Render(k, pad(string(state), 12)) + st.Render(themes.Plain, desc) +
			st.Render(themes.Muted, " · "+writes+" · capabilities "+listOrNone(cr.Capabilities))
		if state != registry.CredentialExpired && state != registry.CredentialRevoked {
			if missing := cr.BelowPolicy(c.Policy); len(missing) > 0 {
				text += st.Render(themes.Warning, " · below policy: needs "+strings.Join(missing, ", ")+" (its next rotation must carry it)")
			}
		}
		line(text)
		if cc := cr.ClientCertificate; cc != nil {
			line(certLine(st, cc)) // its own line: the credential's is cut at 80 columns
		}
	}

	section("REGISTRATION TOKENS")
	if len(f.tokens[c.ID]) == 0 {
		line("  " + st.Render(themes.Muted, "none"))
	}
	for i, t := range f.tokens[c.ID] {
		if i == 5 {
			line("  " + st.Render(themes.Muted, fmt.Sprintf("… and %d older", len(f.tokens[c.ID])-5)))
			break
		}
		state := t.State(now)
		k := themes.Muted
		var desc string
		switch state {
		case registry.TokenActive:
			k = themes.Good
			desc = "unused; expires " + until(now, t.ExpiresAt)
		case registry.TokenUsed:
			desc = "redeemed " + ago(now, t.UsedAt) + " → " + t.CredentialID
		case registry.TokenExpired:
			desc = "expired " + ago(now, t.ExpiresAt) + " unused"
		case registry.TokenRevoked:
			desc = "void " + ago(now, t.RevokedAt) + " (" + t.RevokeReason + ")"
		}
		line("  " + st.Render(themes.Muted, t.ID) + "  " + st.Render(k, pad(string(state), 11)) + st.Render(themes.Plain, desc) +
			st.Render(themes.Muted, " · issued by "+t.CreatedBy))
	}

	var counts []string
	for _, s := range registry.JobStates {
		if n := f.count(c.ID, s); n > 0 {
			counts = append(counts, stateLabel(s)+" "+thousands(n))
		}
	}
	section("RECENT JOBS")
	b.WriteString(st.Render(themes.Muted, "  "+orDash(strings.Join(counts, " · "))+"   (J: all jobs of this cluster)") + "\n")
	switch {
	case d.err != nil:
		line("  " + st.Render(themes.Danger, "could not read: "+errText(d.err)))
	case !d.loaded:
		line("  " + st.Render(themes.Muted, "loading…"))
	case len(d.jobs) == 0:
		line("  " + st.Render(themes.Muted, "none"))
	}
	// The targets take what the id, kind, state and age leave, up to the
	// longest; cut, a target gives up its kind first, as in the jobs list.
	targetW := 0
	for i := range d.jobs {
		targetW = max(targetW, ansi.StringWidth(display.Safe(d.jobs[i].Target.String())))
	}
	targetW = max(10, min(targetW, w-(2+28+2+7+1+12+4)))
	for i := range d.jobs {
		j := &d.jobs[i]
		why := Classify(j, c, now)
		k := jobStateKind(j.State)
		extra := ""
		if why.Reason != registry.NotStuck {
			k, extra = themes.Warning, "  ⚠ "+why.Reason.String()
		}
		target := dropHead(txt(j.Target.String(), themes.Plain), targetW)[0].text // as the jobs list shows it
		line("  " + st.Render(themes.Muted, j.ID) + "  " + st.Render(themes.Plain, pad(string(j.Kind), 7)+pad(target, targetW)+" ") +
			st.Render(k, pad(stateLabel(j.State), 12)) + st.Render(themes.Muted, age(now, j.CreatedAt)) + st.Render(themes.Warning, extra))
	}

	section("RECENT EVENTS")
	b.WriteString(st.Render(themes.Muted, "  (E: all events of this cluster)") + "\n")
	if d.loaded && len(d.events) == 0 {
		line("  " + st.Render(themes.Muted, "none"))
	}
	for i := range d.events {
		e := &d.events[i]
		line("  " + st.Render(themes.Muted, eventTime(now, e.ReceivedAt)) + "  " + joinCell(st, eventSummary(e)))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (d *clusterDetail) Actions() []key.Binding {
	k := d.ctx.Keys
	return []key.Binding{k.IssueToken, k.Edit, k.Rotate, k.Revoke, k.Toggle, k.PauseQueue, k.Delete, k.SubmitJob}
}

func (d *clusterDetail) KeyMap() help.KeyMap {
	k := d.ctx.Keys
	return keyMap{
		short: []key.Binding{k.Back, k.IssueToken, k.Edit, k.Rotate, k.Revoke, k.Toggle, keyClusterJobs, keyClusterEvents, k.Help},
		full: [][]key.Binding{
			{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Back},
			{k.IssueToken, k.Edit, k.Rotate, k.Revoke, k.Toggle, k.PauseQueue, k.Delete},
			{keyClusterJobs, keyClusterEvents, k.CopyID, k.SubmitJob},
		},
	}
}

// posture is one line of a cluster's security posture.
type posture struct {
	label, value string
	kind         themes.Kind
}

// securityPosture is how the cluster's payloads and its agent's requests
// are protected above TLS: signed and encrypted payloads, HMAC-signed
// writes, mTLS, and the encryption key.
func securityPosture(c *registry.Cluster) []posture {
	onOff := func(on bool, yes, no string) (string, themes.Kind) {
		if on {
			return yes, themes.Good
		}
		return no, themes.Muted
	}
	var out []posture
	add := func(label string, on bool, yes, no string) {
		v, k := onOff(on, yes, no)
		out = append(out, posture{label, v, k})
	}
	signed := "yes: Ed25519, bound to each job"
	if c.Policy.AllowLegacyPayloadSignatures {
		signed += "; payload-only too (old agents)"
	}
	add("signed payloads", c.Policy.RequireSignedPayloads, signed, "no")
	add("encrypted payloads", c.Policy.RequireEncryptedPayloads, "yes: JWE to the public key; sealed at rest", "no")
	hmac := slices.Contains(c.Policy.RequiredCapabilities, registry.CapabilityHMAC)
	agentHMAC := slices.Contains(c.Status.Capabilities, registry.CapabilityHMAC)
	switch {
	case hmac:
		out = append(out, posture{"HMAC writes", "required", themes.Good})
	case agentHMAC:
		out = append(out, posture{"HMAC writes", "negotiated by the agent, not required", themes.Plain})
	default:
		out = append(out, posture{"HMAC writes", "not required", themes.Muted})
	}
	add("mTLS", c.Policy.RequireClientCertificate, "required: a client certificate naming the cluster", "not required")
	pk := posture{"public key", "(none): the agent sends one at register, or e edits it", themes.Muted}
	if c.PublicKey != "" {
		pk = posture{"public key", c.PublicKey.Curve() + " · kid " + c.PublicKey.KeyID(), themes.Plain}
	}
	return append(out, pk)
}

// agentRotation is the cluster's "agent rotated" field: when its agent last
// rotated its credential, as its credentials record it. Only the agent
// rotates; a forced rotation (r) makes its credential due, and an agent
// that never rotates (the public operator rotates only when its Cluster
// resource asks) stops working when the grace ends.
func agentRotation(creds []registry.Credential, now time.Time) (string, themes.Kind) {
	var last time.Time
	for i := range creds {
		if at := creds[i].AgentRotatedAt(); at.After(last) {
			last = at
		}
	}
	if last.IsZero() || registry.AgentNeverRotated(creds, now) {
		return "never since it registered: a forced rotation (r) strands an agent that does not rotate", themes.Warning
	}
	return ago(now, last) + " (" + stamp(last) + ")", themes.Plain
}
