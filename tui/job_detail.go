package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/internal/display"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// jobDetail is one job: why it is stuck (if it is), its claim and attempts,
// its result, its status timeline with conditions, and its payload, pretty
// printed and scrollable. The job follows the feed; its timeline is re-read
// when the job changes.
type jobDetail struct {
	ctx     *Context
	id      string
	job     *registry.Job
	readAt  time.Time // when job was read (see registry.Job.LeaseLapsedSince)
	history []registry.JobHistoryEntry
	err     error
	deleted bool // the feed said the job was deleted
	// retryOfGone: the job this one retries was deleted, so `retry of`
	// links to nothing. link is the selected link ([, ]; enter opens it).
	retryOfGone bool
	link        int
	loading     bool
	dirty       bool
	pager       pager
	// revealed is a sealed payload opened on request (P), kept for this
	// view only: the feed's copies of the job stay sealed.
	revealed json.RawMessage
	version  int
	drawn    string
	width    int
	height   int
}

type jobDetailMsg struct {
	id          string
	job         *registry.Job
	history     []registry.JobHistoryEntry
	retryOfGone bool
	err         error
	readAt      time.Time // the console's clock when the read began
}

type jobDetailRefreshMsg struct{ id string }

// jobPayloadMsg is a sealed payload opened on request.
type jobPayloadMsg struct {
	id      string
	payload json.RawMessage
	err     error
}

// showPayload asks the backend to open the job's sealed payload: an
// admin's explicit act, which the registry records in the audit trail.
func (d *jobDetail) showPayload() tea.Cmd {
	if d.job == nil || !d.job.PayloadSealed {
		return info("the payload is not sealed: it is shown under PAYLOAD")
	}
	if d.revealed != nil {
		return info("the payload is shown under PAYLOAD")
	}
	b, id := d.ctx.Backend, d.id
	return func() tea.Msg {
		j, err := b.ShowJobPayload(context.Background(), id)
		if err != nil {
			return jobPayloadMsg{id: id, err: err}
		}
		return jobPayloadMsg{id: id, payload: j.Payload}
	}
}

func newJobDetail(ctx *Context, id string, j *registry.Job) *jobDetail {
	d := &jobDetail{ctx: ctx, id: id, pager: newPager()}
	if j != nil {
		c := *j
		d.job = &c
	}
	return d
}

func (d *jobDetail) load() tea.Cmd {
	d.loading, d.dirty = true, false
	b, id, now := d.ctx.Backend, d.id, d.ctx.Now
	return func() tea.Msg {
		ctx := context.Background()
		j, err := b.GetJob(ctx, id)
		if err != nil {
			return jobDetailMsg{id: id, err: err, readAt: now}
		}
		gone := false
		if j.RetryOf != "" {
			_, err := b.GetJob(ctx, j.RetryOf)
			gone = registry.ErrorCode(err) == registry.CodeNotFound
		}
		h, err := b.JobHistory(ctx, id)
		return jobDetailMsg{id: id, job: j, history: h, retryOfGone: gone, err: err, readAt: now}
	}
}

func (d *jobDetail) Title() string { return d.id }

func (d *jobDetail) busy() bool { return d.loading || d.dirty }

func (d *jobDetail) SetSize(w, h int) {
	d.width, d.height = w, h
	d.pager.setSize(w, h-1)
}

func (d *jobDetail) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case jobDetailMsg:
		if msg.id != d.id {
			return nil
		}
		d.loading, d.err = false, msg.err
		if msg.job != nil {
			d.job, d.readAt, d.retryOfGone = msg.job, msg.readAt, msg.retryOfGone
		}
		if msg.err == nil {
			d.history = msg.history
		}
		d.version++
		if d.dirty {
			return d.refreshLater()
		}
	case jobPayloadMsg:
		if msg.id != d.id {
			return nil
		}
		if msg.err != nil {
			return failed("could not show the payload: " + errText(msg.err))
		}
		d.revealed = msg.payload
		d.version++
		return info("payload shown under PAYLOAD; the viewing is recorded in the audit trail")
	case jobDetailRefreshMsg:
		if msg.id == d.id && d.dirty && !d.loading {
			return d.load()
		}
	case tickMsg:
		// A lease that ran out since the read may have been renewed by a
		// heartbeat, which the feed does not carry: read the job again
		// before it says "expired" for long.
		if d.job != nil && !d.dirty && !d.loading && d.job.LeaseLapsedSince(d.readAt, msg.now) {
			return d.load()
		}
	case feedMsg:
		if slices.Contains(msg.batch.DeletedJobs, d.id) {
			d.deleted = true
			d.version++
		}
		if d.job != nil && d.job.RetryOf != "" && slices.Contains(msg.batch.DeletedJobs, d.job.RetryOf) {
			d.retryOfGone = true
			d.version++
		}
		for _, j := range msg.batch.Jobs {
			if j.RetryOf == d.id && d.job != nil && !slices.Contains(d.job.RetriedBy, j.ID) {
				// A retry of this job was submitted (here or anywhere): the
				// job itself did not change, so say it at once.
				c := *d.job
				c.RetriedBy = append(slices.Clip(c.RetriedBy), j.ID)
				d.job = &c
				d.version++
			}
			if j.ID == d.id {
				// The feed's job carries no retries (only a read of the
				// job does); they stay as read until the re-read.
				c := *j
				if c.RetriedBy == nil && d.job != nil {
					c.RetriedBy = d.job.RetriedBy
				}
				d.job = &c
				d.version++
				if !d.dirty {
					d.dirty = true
					if !d.loading {
						return d.refreshLater()
					}
				}
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
		if d.job == nil {
			return nil
		}
		k := d.ctx.Keys
		switch {
		case key.Matches(msg, keyNextItem), key.Matches(msg, keyPrevItem):
			if n := len(d.links()); n > 1 {
				step := 1
				if key.Matches(msg, keyPrevItem) {
					step = n - 1
				}
				d.link = (d.link + step) % n
				d.version++
			}
			return nil
		case key.Matches(msg, k.Enter):
			return d.openLink()
		case key.Matches(msg, k.Requeue):
			return requeueJobs(d.ctx, []registry.Job{*d.job})
		case key.Matches(msg, k.Retry):
			return retryJobs(d.ctx, []registry.Job{*d.job})
		case key.Matches(msg, k.Cancel):
			return cancelJobs(d.ctx, []registry.Job{*d.job})
		case key.Matches(msg, k.DeleteJob):
			if d.deleted {
				return failed(d.id + " is already deleted")
			}
			return deleteJobs(d.ctx, []registry.Job{*d.job})
		case key.Matches(msg, k.ExtendLease):
			return extendLease(d.ctx, d.job)
		case key.Matches(msg, k.CopyID):
			return tea.Batch(tea.SetClipboard(d.id), info("copied "+d.id+" to the clipboard (OSC 52)"))
		case key.Matches(msg, k.ShowPayload):
			return d.showPayload()
		}
	}
	return nil
}

// links are the jobs this one names that can be opened: the job it
// retries (unless deleted), then its retries, oldest first.
func (d *jobDetail) links() []string {
	var out []string
	if d.job == nil {
		return nil
	}
	if d.job.RetryOf != "" && !d.retryOfGone {
		out = append(out, d.job.RetryOf)
	}
	return append(out, d.job.RetriedBy...)
}

// openLink opens the selected linked job over this one: esc comes back.
func (d *jobDetail) openLink() tea.Cmd {
	links := d.links()
	if len(links) == 0 {
		if d.job != nil && d.job.RetryOf != "" {
			return info(d.job.RetryOf + ", which this job retries, was deleted: the audit trail keeps its delete")
		}
		return nil
	}
	return d.ctx.open(newJobDetail(d.ctx, links[min(d.link, len(links)-1)], nil))
}

func (d *jobDetail) refreshLater() tea.Cmd {
	id := d.id
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return jobDetailRefreshMsg{id: id} })
}

func (d *jobDetail) View() string {
	st := d.ctx.Styles
	title := st.Title.Render("Job " + d.id)
	if d.job == nil {
		body := st.Render(themes.Muted, "  loading…")
		if d.err != nil {
			body = st.Render(themes.Danger, "  could not read the job: "+errText(d.err))
		}
		return pad(title, d.width) + "\n" + body
	}
	j := d.job
	c := d.ctx.Fleet.cluster(j.ClusterID)
	why := Classify(j, c, d.ctx.Now)
	title += "  " + st.Render(jobStateKind(j.State), stateLabel(j.State))
	if d.deleted {
		title += st.Render(themes.Danger, "  deleted")
	}
	if why.Reason != registry.NotStuck {
		title += st.Render(themes.Warning, "  ⚠ stuck: "+why.Reason.String())
	}
	if in := fmt.Sprint(d.ctx.Now.Unix(), d.version, d.width, d.ctx.Fleet.version); in != d.drawn {
		d.pager.setContent(d.render(j, c, why))
		d.drawn = in
	}
	if info := d.pager.scrollInfo(); info != "" {
		title += st.Render(themes.Muted, "  "+info)
	}
	return pad(title, d.width) + "\n" + d.pager.view()
}

func (d *jobDetail) render(j *registry.Job, c *registry.Cluster, why Stuck) string {
	st := d.ctx.Styles
	now := d.ctx.Now
	w := d.width
	var b strings.Builder
	line := func(s string) { b.WriteString(truncate(s, w) + "\n") }
	section := func(s string) { b.WriteString("\n" + st.Section.Render(s) + "\n") }
	// A field's value (data, some the agent's) goes on under its label
	// rather than being cut at the screen's edge: at 80 columns a long
	// target lost the end that tells it from its neighbours
	// (nextcloud-team-a-payments-ledger-01 read …-ledger…).
	field := func(label, value string, k themes.Kind) {
		for i, l := range wrapLines(display.Safe(value), max(20, w-2-18), "/") {
			if i > 0 {
				label = ""
			}
			line("  " + st.Render(themes.Muted, pad(label, 18)) + st.Render(k, l))
		}
	}

	if why.Reason != registry.NotStuck {
		section("WHY IT IS STUCK")
		for _, l := range strings.Split(wrap(why.Explain, max(20, w-4)), "\n") {
			line("  " + st.Render(themes.Warning, l))
		}
	}

	section("JOB")
	cl := j.ClusterID
	maxAtt := 0
	if c != nil {
		cl = c.Name + " (" + c.ID + ")"
		maxAtt = c.Policy.MaxAttempts
	}
	field("cluster", cl, themes.Plain)
	kind := string(j.Kind)
	if j.Intent != "" {
		kind += " (" + j.Intent + ")"
	}
	field("kind", kind, themes.Plain)
	field("target", orDash(j.Target.String()), themes.Plain)
	field("state", stateLabel(j.State), jobStateKind(j.State))
	field("attempt", display.Attempt(j.Attempt, maxAtt), themes.Plain)
	field("submitted", stamp(j.CreatedAt)+" ("+ago(now, j.CreatedAt)+") by "+orDash(j.SubmittedBy), themes.Plain)
	field("updated", stamp(j.UpdatedAt)+" ("+ago(now, j.UpdatedAt)+")", themes.Plain)
	if !j.ExpiresAt.IsZero() {
		field("expires", stamp(j.ExpiresAt)+" ("+until(now, j.ExpiresAt)+") if not acked", themes.Plain)
	}
	if j.IdempotencyKey != "" {
		field("idempotency key", j.IdempotencyKey, themes.Plain)
	}
	// The linked jobs, one a line: the selected one (▸) opens with enter.
	links, sel := d.links(), min(d.link, len(d.links())-1)
	linkField := func(label, id string, k themes.Kind) {
		mark := "  "
		if len(links) > 0 && links[sel] == id {
			mark, k = "▸ ", themes.Accent
		}
		line("  " + st.Render(themes.Muted, pad(label, 18)) + st.Render(themes.Accent, mark) + st.Render(k, display.Safe(id)))
	}
	if j.RetryOf != "" {
		if d.retryOfGone {
			field("retry of", "  "+j.RetryOf+" (deleted)", themes.Muted)
		} else {
			linkField("retry of", j.RetryOf, themes.Plain)
		}
	}
	for i, id := range j.RetriedBy {
		// On-call about to retry a failed job sees it was retried already.
		label := "retried as"
		if i > 0 {
			label = ""
		}
		linkField(label, id, themes.Plain)
	}

	section("CLAIM")
	if j.ClaimID == "" {
		line("  " + st.Render(themes.Muted, "not claimed"))
	} else {
		field("claim (fencing)", j.ClaimID, themes.Plain)
		field("claimed", stamp(j.ClaimedAt)+" ("+ago(now, j.ClaimedAt)+") by credential "+j.ClaimedBy, themes.Plain)
		if j.Leased() {
			k := themes.Plain
			if now.After(j.LeaseExpiresAt) {
				k = themes.Danger
			}
			line("  " + st.Render(themes.Muted, pad("lease", 18)) + joinCell(st, leaseCell(st, j, now)) +
				st.Render(k, fmt.Sprintf("  (%ds lease, ends %s)", j.LeaseSeconds, stamp(j.LeaseExpiresAt))))
		} else if j.LeaseSeconds > 0 {
			// The lease ends with the claim (a result, a cancel): the agent
			// did use one, and a finished job says so, not "none".
			field("lease", fmt.Sprintf("%ds lease, ended with the claim", j.LeaseSeconds), themes.Muted)
		} else {
			field("lease", "none: the agent does not use leases; never reclaimed automatically", themes.Muted)
		}
		field("last activity", ago(now, j.LastActivityAt)+" (ack, status or heartbeat)", themes.Plain)
		if j.Phase != "" {
			field("phase", j.Phase, themes.Plain)
		}
	}

	if j.State.Terminal() {
		section("RESULT")
		if j.Outcome != "" {
			field("outcome", string(j.Outcome), jobStateKind(j.State))
		}
		if j.Error != "" {
			// Why the job failed: wrapped under its label rather than cut at
			// the screen's edge (at 80 columns a Helm error loses its cause),
			// on about errorLines lines.
			ew := max(20, w-2-18)
			text, cut := j.Error, false
			if n := 4 * ew * errorLines; len(text) > n { // an agent may send a megabyte
				for n > 0 && !utf8.RuneStart(text[n]) {
					n--
				}
				text, cut = text[:n], true
			}
			text = display.Safe(text)
			if cut || ansi.StringWidth(text) > ew*errorLines {
				text = ansi.Truncate(text, ew*errorLines-ansi.StringWidth(errorCut), "") + errorCut
			}
			for i, l := range strings.Split(ansi.Wrap(text, ew, ""), "\n") {
				label := ""
				if i == 0 {
					label = "error"
				}
				line("  " + st.Render(themes.Muted, pad(label, 18)) + st.Render(themes.Danger, l))
			}
		}
		field("finished", stamp(j.FinishedAt)+" ("+ago(now, j.FinishedAt)+")", themes.Plain)
		if len(j.Result) > 0 {
			for _, l := range strings.Split(prettyJSON(j.Result), "\n") {
				line("  " + st.Render(themes.Plain, display.Safe(l)))
			}
		}
	}

	section("TIMELINE")
	switch {
	case d.err != nil && d.history == nil:
		line("  " + st.Render(themes.Danger, "could not read the timeline: "+errText(d.err)))
	case d.history == nil:
		line("  " + st.Render(themes.Muted, "loading…"))
	}
	for _, h := range d.history {
		msg := h.Message
		if h.Phase != "" {
			msg = "phase " + h.Phase + ": " + msg
		}
		head := "  " + st.Render(themes.Muted, stamp(h.At)) + "  " + st.Render(themes.Accent, pad(string(h.Type), 15)) +
			st.Render(themes.Muted, pad(fmt.Sprintf("#%d", h.Attempt), 4)) + st.Render(jobStateKind(h.State), pad(stateLabel(h.State), 12))
		by := "  by " + shortActor(d.ctx.Fleet, h.Actor)
		text := display.Safe(msg) + by
		room := w - ansi.StringWidth(head)
		if ansi.StringWidth(text) <= room || room < 10 {
			line(head + st.Render(themes.Plain, display.Safe(msg)) + st.Render(themes.Muted, by))
		} else {
			// Too long for its row (80 columns leave the message some 20
			// cells: "lease expired: back in t…"): it goes on below,
			// on at most timelineLines lines.
			first := ansi.Truncate(text, room, "")
			if i := strings.LastIndexAny(first, " /"); i > 0 {
				first = first[:i+1] // at a space or after a "/", not inside a word
			}
			line(head + st.Render(themes.Plain, first))
			rest := wrapLines(strings.TrimLeft(text[len(first):], " "), max(20, w-6), "/")
			if len(rest) > timelineLines {
				rest = rest[:timelineLines]
				rest[timelineLines-1] = ansi.Truncate(rest[timelineLines-1], max(20, w-6)-1, "") + "…"
			}
			for _, l := range rest {
				line("      " + st.Render(themes.Plain, l))
			}
		}
		for _, cond := range h.Conditions {
			k := themes.Good
			if cond.Status == "False" {
				k = themes.Danger
			}
			line("      " + st.Render(k, display.Safe(cond.Type+"="+cond.Status)) + st.Render(themes.Plain, " "+display.Safe(strings.TrimSpace(cond.Reason+" "+cond.Message))))
		}
	}

	section("PAYLOAD")
	payload := j.Payload
	if j.PayloadSealed {
		if d.revealed == nil {
			line("  " + st.Render(themes.Muted, "sealed at rest and withheld (the cluster requires encrypted payloads);"))
			line("  " + st.Render(themes.Muted, "P shows it, recorded in the audit trail as "+registry.AuditJobPayloadViewed))
			return strings.TrimSuffix(b.String(), "\n")
		}
		line("  " + st.Render(themes.Warning, "sealed payload, shown on request (audited)"))
		payload = d.revealed
	}
	for _, l := range strings.Split(prettyJSON(payload), "\n") {
		line("  " + st.Render(themes.Plain, display.Safe(l)))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// prettyJSON indents a JSON document (or returns it as is if it is not
// one).
// A job's error is shown in its detail on about errorLines lines; a longer
// one is cut, ending with errorCut.
const (
	// timelineLines: a timeline entry's message goes on below its row on
	// at most this many lines (the result's error is whole under RESULT).
	timelineLines = 3
	errorLines    = 12
	errorCut      = " … (cut: tether job get shows it whole)"
)

func prettyJSON(raw []byte) string {
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return string(raw)
	}
	return out.String()
}

func (d *jobDetail) Actions() []key.Binding {
	k := d.ctx.Keys
	return []key.Binding{k.Requeue, k.Cancel, k.Retry, k.DeleteJob, k.ExtendLease, k.ShowPayload}
}

var keyOpenLink = key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open the linked job ▸"))

// linkKeys are the footer's keys for the links, when there are any.
func (d *jobDetail) linkKeys() []key.Binding {
	switch n := len(d.links()); {
	case n == 1:
		return []key.Binding{keyOpenLink}
	case n > 1:
		return []key.Binding{keyOpenLink, keyNextItem}
	}
	return nil
}

// actionKeys are the actions the job's state allows (the registry's
// rules), for the footer: a failed job offers F retry and D delete, not C
// cancel and L extend lease, which it would refuse.
func (d *jobDetail) actionKeys() []key.Binding {
	j := d.job
	if j == nil || d.deleted {
		return nil
	}
	k := d.ctx.Keys
	var out []key.Binding
	for _, a := range []struct {
		b  key.Binding
		ok bool
	}{
		{k.Retry, registry.ActionRetry.Applies(j)},
		{k.Requeue, registry.ActionRequeue.Applies(j)},
		{k.Cancel, registry.ActionCancel.Applies(j)},
		{k.DeleteJob, registry.ActionDelete.Applies(j)},
		{k.ExtendLease, j.State == registry.JobInProgress && j.Leased()},
	} {
		if a.ok {
			out = append(out, a.b)
		}
	}
	return out
}

func (d *jobDetail) KeyMap() help.KeyMap {
	k := d.ctx.Keys
	short := append(d.linkKeys(), k.Back, k.Up, k.Down)
	short = append(append(short, d.actionKeys()...), k.CopyID, k.Help)
	return keyMap{
		short: short,
		full: [][]key.Binding{
			{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Back},
			{keyOpenLink, keyNextItem, keyPrevItem},
			{k.Requeue, k.Cancel, k.Retry, k.DeleteJob, k.ExtendLease, k.CopyID, k.ShowPayload},
		},
	}
}
