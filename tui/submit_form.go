package tui

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"slices"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// submitForm submits a job from the console (n in the jobs view and a
// cluster's detail), as tether job submit and POST /jobs do: the registry
// checks the payload against the cluster's allowlists, and a refusal is
// shown under the payload, the form kept as typed, to be corrected there.
type submitForm struct {
	ctx     *Context
	cluster *formField // id or name, completed from the fleet's names
	kind    *formField
	file    *formField // a path: enter loads the file into the payload
	idem    *formField
	expires *formField
	payload textarea.Model
	focus   int // index in order()
	example string
	refusal string // the registry's refusal, shown under the payload
	err     string // what the form itself refused (a duration, a file)
	sending bool
	// hostFiles: the From file field and ctrl+e ($EDITOR) are offered,
	// both on the machine the console runs on (not over SSH:
	// Options.NoHostAccess).
	hostFiles bool
}

// The order of the fields; the payload is focusPayload.
const (
	focusCluster = iota
	focusKind
	focusPayload
	focusFile
	focusIdem
	focusExpires
	focusCount
)

var (
	keySubmitEditor = key.NewBinding(key.WithKeys("ctrl+e"), key.WithHelp("ctrl+e", "edit the payload in $EDITOR"))
	keySubmitSend   = key.NewBinding(key.WithKeys("ctrl+s"), key.WithHelp("ctrl+s", "submit"))
)

// submitKinds are the kinds offered; each opens with its example payload
// (registry.PayloadExampleNamed: intent is the first intent's).
var submitKinds = []string{string(registry.KindApply), string(registry.KindDelete), string(registry.KindIntent)}

// newSubmitForm opens the form, with cluster (a name) preselected when the
// form is opened from the cluster's detail.
func newSubmitForm(ctx *Context, cluster string) *submitForm {
	text := func(k, label, help, v string) *formField {
		return &formField{key: k, label: label, help: help, kind: fieldText, input: newInput(ctx, v), sel: -1}
	}
	f := &submitForm{ctx: ctx, hostFiles: ctx.Opts == nil || !ctx.Opts.NoHostAccess,
		cluster: text("cluster", "Cluster", "name or id; tab completes a name", cluster),
		kind: &formField{key: "kind", label: "Kind", help: "the payload starts as the kind's example until edited",
			kind: fieldChoice, choices: submitKinds},
		file:    text("file", "From file", "a path; enter loads it into the payload", ""),
		idem:    text("idempotency", "Idempotency key", "optional: the same key answers the job it made", ""),
		expires: text("expires", "Expires in", "optional: unacked for this long, the job expires (90s, 5m, 1h)", ""),
	}
	f.cluster.input.ShowSuggestions = true
	f.cluster.input.KeyMap.AcceptSuggestion = key.NewBinding(key.WithKeys("right")) // tab is the form's
	var names []string
	for _, c := range ctx.Fleet.sorted {
		names = append(names, c.Name)
	}
	f.cluster.input.SetSuggestions(names)
	f.file.input.Placeholder = "./job.json"

	f.payload = textarea.New()
	f.payload.ShowLineNumbers = false
	f.payload.Prompt = "│ "
	f.payload.CharLimit = 0
	f.payload.MaxHeight = 0
	st := textarea.DefaultStyles(ctx.Styles.Theme.Dark)
	st.Cursor.Blink = false
	st.Focused.CursorLine = ctx.Styles.Of(themes.Plain, false)
	st.Focused.Text = ctx.Styles.Of(themes.Plain, false)
	st.Blurred.Text = ctx.Styles.Of(themes.Muted, false)
	st.Blurred.CursorLine = ctx.Styles.Of(themes.Muted, false)
	st.Focused.Prompt = ctx.Styles.Of(themes.Accent, false)
	st.Blurred.Prompt = ctx.Styles.Of(themes.Muted, false)
	f.payload.SetStyles(st)
	f.setExample()
	if cluster != "" {
		f.setFocus(focusKind)
	} else {
		f.setFocus(focusCluster)
	}
	return f
}

// setExample puts the kind's example in the payload.
func (f *submitForm) setExample() {
	ex, err := registry.PayloadExampleNamed(f.kind.choices[f.kind.choice])
	if err != nil {
		return
	}
	f.example = ex.Payload
	f.payload.SetValue(ex.Payload)
	f.payload.MoveToBegin()
}

func (f *submitForm) inputs() []*formField {
	return []*formField{focusCluster: f.cluster, focusKind: f.kind, focusFile: f.file, focusIdem: f.idem, focusExpires: f.expires}
}

func (f *submitForm) setFocus(i int) {
	dir := 1
	if i < f.focus {
		dir = -1
	}
	i = (i + focusCount) % focusCount
	if i == focusFile && !f.hostFiles {
		i = (i + dir + focusCount) % focusCount
	}
	f.focus = i
	for _, fd := range f.inputs() {
		if fd != nil {
			fd.input.Blur()
		}
	}
	f.payload.Blur()
	if f.focus == focusPayload {
		f.payload.Focus()
		return
	}
	if fd := f.inputs()[f.focus]; fd.kind == fieldText {
		fd.input.Focus()
		fd.input.CursorEnd()
	}
}

// submitRefusedMsg: the registry refused form's submission with err.
type submitRefusedMsg struct {
	form *submitForm
	err  error
}

// editorDoneMsg: $EDITOR exited; path holds the edited payload.
type editorDoneMsg struct {
	form *submitForm
	path string
	err  error
}

func (f *submitForm) Update(msg tea.Msg) (modal, tea.Cmd) {
	switch msg := msg.(type) {
	case submitRefusedMsg:
		if msg.form == f {
			f.sending, f.refusal = false, refusalText(msg.err)
		}
		return f, nil
	case editorDoneMsg:
		if msg.form == f {
			f.editorDone(msg)
		}
		return f, nil
	}
	k, ok := msg.(tea.KeyPressMsg)
	if !ok || f.sending {
		return f, nil
	}
	switch {
	case key.Matches(k, keyCancel):
		return nil, info("canceled: no job submitted")
	case key.Matches(k, keySubmitSend):
		return f, f.submit()
	case key.Matches(k, keyNextField):
		if f.focus == focusCluster {
			if s := f.cluster.input.CurrentSuggestion(); s != "" && s != f.cluster.value() && f.cluster.value() != "" {
				f.cluster.input.SetValue(s)
				f.cluster.input.CursorEnd()
				return f, nil
			}
		}
		f.setFocus(f.focus + 1)
		return f, nil
	case key.Matches(k, keyPrevField):
		f.setFocus(f.focus - 1)
		return f, nil
	}
	if f.focus == focusPayload {
		if key.Matches(k, keySubmitEditor) && f.hostFiles {
			return f, f.openEditor()
		}
		var cmd tea.Cmd
		f.payload, cmd = f.payload.Update(k)
		return f, cmd
	}
	fd := f.inputs()[f.focus]
	if fd.kind == fieldChoice {
		was := f.kind.choice
		switch k.String() {
		case "left", "h":
			fd.choice = (fd.choice + len(fd.choices) - 1) % len(fd.choices)
		case "right", "l", "space":
			fd.choice = (fd.choice + 1) % len(fd.choices)
		case "up":
			f.setFocus(f.focus - 1)
		case "down", "enter":
			f.setFocus(f.focus + 1)
		}
		// An untouched example follows the kind; an edited payload stays.
		if fd.choice != was && strings.TrimSpace(f.payload.Value()) == strings.TrimSpace(f.example) {
			f.setExample()
		}
		return f, nil
	}
	switch {
	case f.focus == focusFile && k.String() == "enter":
		f.loadFile()
		return f, nil
	case key.Matches(k, keyUpField):
		f.setFocus(f.focus - 1)
		return f, nil
	case key.Matches(k, keyDownField), k.String() == "enter":
		f.setFocus(f.focus + 1)
		return f, nil
	}
	var cmd tea.Cmd
	fd.input, cmd = fd.input.Update(k)
	f.err = ""
	return f, cmd
}

// refusalText is the registry's refusal with its rule when it names one
// (namespace_not_allowed...), as the API's error code says it.
func refusalText(err error) string {
	code := registry.ErrorCode(err)
	switch code {
	case "", registry.CodeInvalid, registry.CodeInternal:
		return "refused: " + errText(err)
	}
	return fmt.Sprintf("refused (%s): %s", code, errText(err))
}

func (f *submitForm) loadFile() {
	path := f.file.value()
	if path == "" || !f.hostFiles {
		f.setFocus(f.focus + 1)
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		f.err = fmt.Sprintf("From file: cannot read %s: %v", path, unwrapPathErr(err))
		return
	}
	f.payload.SetValue(string(b))
	f.payload.MoveToBegin()
	f.file.input.SetValue("")
	f.err, f.refusal = "", ""
	f.setFocus(focusPayload)
}

func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// openEditor suspends the console and edits the payload in $VISUAL or
// $EDITOR (vi when neither is set), through a temporary file.
func (f *submitForm) openEditor() tea.Cmd {
	if !f.hostFiles {
		return nil
	}
	editor := strings.Fields(os.Getenv("VISUAL"))
	if len(editor) == 0 {
		editor = strings.Fields(os.Getenv("EDITOR"))
	}
	if len(editor) == 0 {
		editor = []string{"vi"}
	}
	tmp, err := os.CreateTemp("", "tether-job-*.json")
	if err == nil {
		_, err = tmp.WriteString(f.payload.Value())
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		f.err = "cannot write the payload for the editor: " + err.Error()
		return nil
	}
	path := tmp.Name()
	c := osexec.Command(editor[0], append(editor[1:], path)...) //nolint:gosec // the operator's own editor
	return tea.ExecProcess(c, func(err error) tea.Msg { return editorDoneMsg{form: f, path: path, err: err} })
}

func (f *submitForm) editorDone(msg editorDoneMsg) {
	defer os.Remove(msg.path)
	if msg.err != nil {
		f.err = "the editor failed, the payload is as it was: " + msg.err.Error()
		return
	}
	b, err := os.ReadFile(msg.path)
	if err != nil {
		f.err = "cannot read the edited payload: " + err.Error()
		return
	}
	f.payload.SetValue(strings.TrimRight(string(b), "\n"))
	f.payload.MoveToBegin()
	f.err, f.refusal = "", ""
}

func (f *submitForm) submit() tea.Cmd {
	s := registry.JobSubmission{
		ClusterID:      f.cluster.value(),
		Kind:           registry.JobKind(f.kind.choices[f.kind.choice]),
		Payload:        []byte(f.payload.Value()),
		IdempotencyKey: f.idem.value(),
	}
	switch {
	case s.ClusterID == "":
		f.err = "Cluster: name the cluster to run the job (tab completes a name)"
		return nil
	case f.file.value() != "":
		f.err = fmt.Sprintf("From file: %q was typed but not loaded; press enter on it to load it, or clear it", f.file.value())
		return nil
	}
	if v := f.expires.value(); v != "" {
		d, err := durationInput(v)
		if err != nil {
			f.err = "Expires in: " + err.Error()
			return nil
		}
		s.ExpiresIn = d
	}
	f.sending, f.err, f.refusal = true, "", ""
	b, ctx := f.ctx.Backend, f.ctx
	return runAction(fmt.Sprintf("submit a %s job to %s", s.Kind, s.ClusterID), func(cx context.Context) outcome {
		j, _, err := b.SubmitJob(cx, s)
		if err != nil {
			return outcome{err: err, then: []tea.Msg{submitRefusedMsg{f, err}}}
		}
		return outcome{ok: fmt.Sprintf("submitted job %s (%s) to %s", j.ID, j.Kind, s.ClusterID),
			then: []tea.Msg{closeModalMsg{f}, openDetailMsg{newJobDetail(ctx, j.ID, j)}}}
	})
}

func (f *submitForm) View() string {
	ctx := f.ctx
	st := ctx.Styles
	width := min(ctx.Width-2, 100)
	inner := width - 4
	labelW := 17
	valueW := inner - labelW - 2
	var lines []string
	add := func(text string) { lines = append(lines, strings.Split(text, "\n")...) }
	label := func(i int, text string) string {
		if i == f.focus {
			return st.Render(themes.Accent, "▸ "+pad(text, labelW-2)) + "  "
		}
		return st.Render(themes.Muted, pad(text, labelW)) + "  "
	}
	indent := strings.Repeat(" ", labelW+2)
	helpLine := func(i int, fd *formField) {
		if i == f.focus && fd.help != "" {
			add(indent + st.Render(themes.Muted, truncate(fd.help, valueW)))
		}
	}
	f.cluster.input.SetWidth(valueW - 1)
	add(label(focusCluster, "Cluster") + f.cluster.input.View())
	helpLine(focusCluster, f.cluster)
	var parts []string
	for j, c := range f.kind.choices {
		switch {
		case j == f.kind.choice && f.focus == focusKind:
			parts = append(parts, st.TabActive.Render(" "+c+" "))
		case j == f.kind.choice:
			parts = append(parts, st.Render(themes.Plain, "["+c+"]"))
		default:
			parts = append(parts, st.Render(themes.Muted, " "+c+" "))
		}
	}
	add(label(focusKind, "Kind") + strings.Join(parts, " "))
	helpLine(focusKind, f.kind)

	// The payload takes the height the other lines leave (3 to 20 lines).
	var refusal []string
	if f.refusal != "" {
		refusal = strings.Split(wrap(f.refusal, valueW), "\n")
	}
	room := ctx.Height - 1 - st.Modal.GetVerticalFrameSize() - 2 - 3
	if f.err != "" {
		room -= 1 + strings.Count(wrap(f.err, inner), "\n")
	}
	h := max(3, min(20, room-len(lines)-len(refusal)-4))
	f.payload.SetWidth(valueW)
	f.payload.SetHeight(h)
	for i, l := range strings.Split(f.payload.View(), "\n") {
		if i == 0 {
			add(label(focusPayload, "Payload") + l)
		} else {
			add(indent + l)
		}
	}
	for _, l := range refusal {
		add(indent + st.Render(themes.Danger, l))
	}
	for _, x := range []struct {
		i  int
		fd *formField
	}{{focusFile, f.file}, {focusIdem, f.idem}, {focusExpires, f.expires}} {
		if x.i == focusFile && !f.hostFiles {
			continue
		}
		x.fd.input.SetWidth(valueW - 1)
		add(label(x.i, x.fd.label) + x.fd.input.View())
		helpLine(x.i, x.fd)
	}
	var b strings.Builder
	b.WriteString(strings.Join(lines, "\n") + "\n\n")
	switch {
	case f.sending:
		b.WriteString(st.Render(themes.Info, "submitting…"))
	case f.err != "":
		b.WriteString(st.Render(themes.Danger, wrap(f.err, inner)))
	}
	b.WriteString("\n" + f.hintLine())
	return frame(ctx, "Submit a job", b.String(), width, false)
}

func (f *submitForm) hintLine() string {
	switch f.focus {
	case focusPayload:
		if !f.hostFiles {
			return hints(f.ctx, "tab", "next field", "ctrl+s", "submit", "esc", "cancel")
		}
		return hints(f.ctx, "ctrl+e", "$EDITOR", "tab", "next field", "ctrl+s", "submit", "esc", "cancel")
	case focusKind:
		return hints(f.ctx, "←/→", "choose", "tab", "next field", "ctrl+s", "submit", "esc", "cancel")
	case focusFile:
		return hints(f.ctx, "enter", "load", "tab", "next field", "ctrl+s", "submit", "esc", "cancel")
	}
	return hints(f.ctx, "tab/↓", "next field", "shift+tab/↑", "previous", "ctrl+s", "submit", "esc", "cancel")
}

func (f *submitForm) KeyMap() help.KeyMap {
	b := []key.Binding{keyNextField, keyPrevField, keyChoice, keySubmitEditor, keySubmitSend, keyCancel}
	if !f.hostFiles {
		b = slices.Delete(b, 3, 4)
	}
	return keyMap{short: []key.Binding{keyNextField, keySubmitSend, keyCancel}, full: [][]key.Binding{b[:3], b[3:]}}
}
