package tui

import (
	"slices"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/themes"
)

// modal is a dialog over the current view. It takes every key while open;
// Update returns nil to close it.
type modal interface {
	Update(msg tea.Msg) (modal, tea.Cmd)
	View() string
	KeyMap() help.KeyMap
}

// frame draws a modal's box: a title line, then the body, at most width
// cells wide (border included).
func frame(ctx *Context, title, body string, width int, danger bool) string {
	width = max(20, min(width, ctx.Width))
	st := ctx.Styles.Modal
	if danger {
		st = ctx.Styles.DangerModal
	}
	inner := width - st.GetHorizontalFrameSize()
	titleStyle := ctx.Styles.Title
	if danger {
		titleStyle = ctx.Styles.Of(themes.Danger, false).Bold(true)
	}
	content := titleStyle.Render(truncate(title, inner)) + "\n\n" + body
	return st.Width(width).Render(content)
}

// wrap breaks text into lines of at most width cells, at spaces only: an
// id (j-01m…) or a timestamp (2026-05-28T10:29:00Z) stays whole, to be read
// and copied, where a hyphen would otherwise break it. Only a word longer
// than a line is cut.
func wrap(text string, width int) string {
	width = max(1, width)
	return lipgloss.NewStyle().Width(width).Render(strings.Join(wrapLines(text, width, ""), "\n"))
}

// wrapLines cuts text into lines of at most width cells at its spaces
// only; a word longer than a line is cut after the last of cuts (a
// target's "/") that fits, or else at the width.
func wrapLines(text string, width int, cuts string) []string {
	width = max(1, width)
	var lines []string
	for _, para := range strings.Split(text, "\n") {
		cur, started := "", false
		for _, word := range strings.Split(para, " ") {
			switch {
			case !started:
				cur, started = word, true
			case ansi.StringWidth(cur)+1+ansi.StringWidth(word) <= width:
				cur += " " + word
			default:
				lines = append(lines, cur)
				cur = word
			}
			for ansi.StringWidth(cur) > width {
				head := ansi.Truncate(cur, width, "")
				if i := strings.LastIndexAny(head, cuts); cuts != "" && i > 0 {
					head = head[:i+1]
				}
				lines = append(lines, head)
				cur = cur[len(head):]
			}
		}
		lines = append(lines, cur)
	}
	return lines
}

// hints renders a modal's key hints.
func hints(ctx *Context, pairs ...string) string {
	var parts []string
	for i := 0; i+1 < len(pairs); i += 2 {
		parts = append(parts, ctx.Styles.Key.Render(pairs[i])+" "+ctx.Styles.KeyDesc.Render(pairs[i+1]))
	}
	return strings.Join(parts, ctx.Styles.KeySep.Render(" · "))
}

var (
	keyYes     = key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "yes"))
	keyNo      = key.NewBinding(key.WithKeys("n", "esc"), key.WithHelp("n/esc", "no"))
	keyConfirm = key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "confirm"))
	keyCancel  = key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel"))
	keyClose   = key.NewBinding(key.WithKeys("esc", "q"), key.WithHelp("esc", "close"))
)

// confirm asks yes or no; only y says yes, so that a stray enter never
// confirms something destructive.
type confirm struct {
	ctx    *Context
	title  string
	body   string
	yes    string // what y does, e.g. "requeue"
	danger bool
	onYes  tea.Cmd
	alt    *confirmAlt // another way to say yes, when there is one
	// jobs, when set, are the jobs it acts on as it showed them: a change
	// to one closes it (watchJobs).
	jobs map[string]jobSeen
}

// confirmAlt is a confirmation's second yes: e, such as "requeue with the
// expiry extended".
type confirmAlt struct {
	label string
	run   tea.Cmd
}

var keyAlt = key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "the other choice"))

func newConfirm(ctx *Context, title, body, yes string, danger bool, onYes tea.Cmd) *confirm {
	return &confirm{ctx: ctx, title: title, body: body, yes: yes, danger: danger, onYes: onYes}
}

// withAlt adds the second yes (a nil alt adds none).
func (c *confirm) withAlt(alt *confirmAlt) *confirm {
	c.alt = alt
	return c
}

func (c *confirm) Update(msg tea.Msg) (modal, tea.Cmd) {
	if f, ok := msg.(feedMsg); ok && c.jobs != nil {
		if why := c.jobChanged(&f.batch); why != "" {
			return nil, failed(why)
		}
	}
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(k, keyYes):
			return nil, c.onYes
		case c.alt != nil && key.Matches(k, keyAlt):
			return nil, c.alt.run
		case key.Matches(k, keyNo):
			return nil, info("canceled: nothing changed")
		}
	}
	return c, nil
}

func (c *confirm) width() int { return 72 }

func (c *confirm) View() string {
	inner := min(c.width(), c.ctx.Width-2) - 4
	keys := []string{"y", c.yes}
	if c.alt != nil {
		keys = append(keys, "e", c.alt.label)
	}
	body := wrap(c.body, inner) + "\n\n" + hints(c.ctx, append(keys, "n/esc", "do nothing")...) // not "cancel": y may be "cancel them"
	return frame(c.ctx, c.title, body, c.width(), c.danger)
}

func (c *confirm) KeyMap() help.KeyMap {
	if c.alt != nil {
		alt := keyAlt
		alt.SetHelp("e", c.alt.label)
		return keyMap{short: []key.Binding{keyYes, alt, keyNo}, full: [][]key.Binding{{keyYes, alt, keyNo}}}
	}
	return keyMap{short: []key.Binding{keyYes, keyNo}, full: [][]key.Binding{{keyYes, keyNo}}}
}

// typedConfirm asks the person to type a name before something that cannot
// be undone.
type typedConfirm struct {
	ctx   *Context
	title string
	body  string
	want  string
	input textinput.Model
	hint  string
	onYes tea.Cmd
}

func newTypedConfirm(ctx *Context, title, body, want string, onYes tea.Cmd) *typedConfirm {
	in := newInput(ctx, "")
	in.Placeholder = want
	in.Focus()
	return &typedConfirm{ctx: ctx, title: title, body: body, want: want, input: in, onYes: onYes}
}

func (c *typedConfirm) Update(msg tea.Msg) (modal, tea.Cmd) {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(k, keyCancel):
			return nil, info("canceled: nothing changed")
		case key.Matches(k, keyConfirm):
			if c.input.Value() != c.want {
				c.hint = "that is not " + c.want + "; type it exactly (or esc to cancel)"
				return c, nil
			}
			return nil, c.onYes
		}
	}
	var cmd tea.Cmd
	c.input, cmd = c.input.Update(msg)
	if _, typed := msg.(tea.KeyPressMsg); typed { // not a tick or a feed: the hint stays until a key
		c.hint = ""
	}
	return c, cmd
}

func (c *typedConfirm) View() string {
	inner := min(72, c.ctx.Width-2) - 4
	c.input.SetWidth(inner - 4)
	var b strings.Builder
	b.WriteString(wrap(c.body, inner))
	b.WriteString("\n\n")
	b.WriteString(c.ctx.Styles.Render(themes.Plain, "Type ") + c.ctx.Styles.Render(themes.Accent, c.want) +
		c.ctx.Styles.Render(themes.Plain, " to confirm:") + "\n")
	b.WriteString(c.input.View())
	b.WriteString("\n")
	if c.hint != "" {
		b.WriteString(c.ctx.Styles.Render(themes.Danger, truncate(c.hint, inner)))
	}
	b.WriteString("\n" + hints(c.ctx, "enter", "confirm", "esc", "cancel"))
	return frame(c.ctx, c.title, b.String(), 72, true)
}

func (c *typedConfirm) KeyMap() help.KeyMap {
	return keyMap{short: []key.Binding{keyConfirm, keyCancel}, full: [][]key.Binding{{keyConfirm, keyCancel}}}
}

// prompt asks for one value.
type prompt struct {
	ctx      *Context
	title    string
	body     string
	label    string
	input    textinput.Model
	err      string
	onSubmit func(value string) (tea.Cmd, error)
}

func newPrompt(ctx *Context, title, body, label, value string, onSubmit func(string) (tea.Cmd, error)) *prompt {
	in := newInput(ctx, value)
	in.Focus()
	in.CursorEnd()
	return &prompt{ctx: ctx, title: title, body: body, label: label, input: in, onSubmit: onSubmit}
}

func (p *prompt) Update(msg tea.Msg) (modal, tea.Cmd) {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(k, keyCancel):
			return nil, info("canceled: nothing changed")
		case key.Matches(k, keyConfirm):
			cmd, err := p.onSubmit(p.input.Value())
			if err != nil {
				p.err = err.Error()
				return p, nil
			}
			return nil, cmd
		}
	}
	var cmd tea.Cmd
	p.input, cmd = p.input.Update(msg)
	if _, typed := msg.(tea.KeyPressMsg); typed { // not a tick or a feed: the error stays until a key
		p.err = ""
	}
	return p, cmd
}

func (p *prompt) View() string {
	inner := min(64, p.ctx.Width-2) - 4
	p.input.SetWidth(inner - len(p.label) - 4)
	var b strings.Builder
	if p.body != "" {
		b.WriteString(wrap(p.body, inner) + "\n\n")
	}
	b.WriteString(p.ctx.Styles.Render(themes.Muted, p.label+" ") + p.input.View() + "\n")
	if p.err != "" {
		b.WriteString(p.ctx.Styles.Render(themes.Danger, wrap(p.err, inner)))
	}
	b.WriteString("\n" + hints(p.ctx, "enter", "ok", "esc", "cancel"))
	return frame(p.ctx, p.title, b.String(), 64, false)
}

func (p *prompt) KeyMap() help.KeyMap {
	return keyMap{short: []key.Binding{keyConfirm, keyCancel}, full: [][]key.Binding{{keyConfirm, keyCancel}}}
}

// helpModal is `?`: every key of the current view, generated from its
// keymap, and the global ones.
type helpModal struct {
	ctx    *Context
	title  string
	keys   help.KeyMap
	global [][]key.Binding
	// pager scrolls the help when it is taller than the screen (80x24:
	// the keys, then everywhere's, then the commands).
	pager  pager
	scroll bool
}

func (h *helpModal) Update(msg tea.Msg) (modal, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		if key.Matches(msg, keyClose) || key.Matches(msg, h.ctx.Keys.Help) {
			return nil, nil
		}
		h.pager.navigate(msg, h.ctx.Keys)
	case tea.MouseWheelMsg:
		h.pager.wheel(msg)
	}
	return h, nil
}

func (h *helpModal) View() string {
	hm := newHelp(h.ctx)
	width := min(h.ctx.Width-2, 110)
	st := h.ctx.Styles
	body := helpColumns(hm, h.keys.FullHelp(), width-4) + "\n\n" +
		st.Section.Render("Everywhere") + "\n" + helpColumns(hm, h.global, width-4) + "\n\n" +
		st.Section.Render("Commands (:, tab completes)") + "\n" + commandsHelp(st, width-4)
	// The frame, the title and the hints take seven lines of the screen.
	room := max(3, h.ctx.Height-7)
	h.scroll = strings.Count(body, "\n")+1 > room
	if !h.scroll {
		return frame(h.ctx, "Keys: "+h.title, body+"\n\n"+hints(h.ctx, "esc/?", "close"), width, false)
	}
	h.pager.setSize(width-4, room)
	h.pager.setContent(body)
	return frame(h.ctx, "Keys: "+h.title, h.pager.view()+"\n\n"+hints(h.ctx, "↑/↓", "scroll ("+h.pager.scrollInfo()+")", "esc/?", "close"), width, false)
}

// helpColumns lays groups of keys out side by side, starting a new row of
// groups where the next would not fit: every key shows, none hides behind
// an ellipsis at 80 columns.
func helpColumns(hm help.Model, groups [][]key.Binding, width int) string {
	hm.SetWidth(0) // measured whole; the rows are what fits
	var rows []string
	var row [][]key.Binding
	for _, g := range groups {
		next := append(slices.Clone(row), g)
		if len(row) > 0 && lipgloss.Width(hm.FullHelpView(next)) > width {
			rows = append(rows, hm.FullHelpView(row))
			next = [][]key.Binding{g}
		}
		row = next
	}
	if len(row) > 0 {
		rows = append(rows, hm.FullHelpView(row))
	}
	return strings.Join(rows, "\n")
}

func (h *helpModal) KeyMap() help.KeyMap {
	return keyMap{short: []key.Binding{keyClose}, full: [][]key.Binding{{keyClose}}}
}

// newHelp is a bubbles help model in the theme's colours.
func newHelp(ctx *Context) help.Model {
	h := help.New()
	h.Styles = help.Styles{
		ShortKey: ctx.Styles.Key, ShortDesc: ctx.Styles.KeyDesc, ShortSeparator: ctx.Styles.KeySep,
		FullKey: ctx.Styles.Key, FullDesc: ctx.Styles.KeyDesc, FullSeparator: ctx.Styles.KeySep,
		Ellipsis: ctx.Styles.KeySep,
	}
	return h
}

// newInput is a text input in the theme's colours, with a steady cursor (a
// blinking one would redraw the screen twice a second for nothing).
func newInput(ctx *Context, value string) textinput.Model {
	in := textinput.New()
	in.Prompt = ""
	st := textinput.DefaultStyles(ctx.Styles.Theme.Dark)
	st.Cursor.Blink = false
	if c := ctx.Styles.Theme.Accent; c != nil {
		st.Cursor.Color = c
	}
	st.Focused.Text = ctx.Styles.Of(themes.Plain, false)
	st.Blurred.Text = ctx.Styles.Of(themes.Muted, false)
	st.Focused.Placeholder = ctx.Styles.Of(themes.Muted, false)
	st.Blurred.Placeholder = ctx.Styles.Of(themes.Muted, false)
	st.Focused.Suggestion = ctx.Styles.Of(themes.Muted, false)
	in.SetStyles(st)
	in.SetValue(value)
	return in
}
