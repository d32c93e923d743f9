package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/themes"
)

// The cluster form drawn: its fields in a window that scrolls to the
// focused one, and the keys it takes.

func (f *clusterForm) View() string {
	ctx := f.ctx
	st := ctx.Styles
	width := min(ctx.Width-2, 96)
	inner := width - 4
	labelW := 16 // room for the longest label after the focus mark (▸)
	for _, fd := range f.fields {
		labelW = max(labelW, ansi.StringWidth(fd.label)+2)
	}
	valueW := inner - labelW - 2
	var lines []string
	add := func(text string) { lines = append(lines, strings.Split(text, "\n")...) }
	if f.note != "" {
		add(st.Render(themes.Warning, wrap(f.note, inner)))
		add("")
	}
	// The lines that must be in view: the focused field, or in a long list
	// the selected item or the input line.
	focusTop, focusBottom := 0, 0
	for i, fd := range f.fields {
		var b strings.Builder
		start := len(lines)
		focused := i == f.focus
		label := pad(fd.label, labelW)
		if focused {
			label = st.Render(themes.Accent, "▸ "+pad(fd.label, labelW-2))
		} else {
			label = st.Render(themes.Muted, label)
		}
		b.WriteString(label + "  ")
		switch fd.kind {
		case fieldText, fieldNumber:
			fd.input.SetWidth(valueW - 1)
			b.WriteString(fd.input.View())
		case fieldChoice:
			var parts []string
			for j, c := range fd.choices {
				switch {
				case j == fd.choice && focused:
					parts = append(parts, st.TabActive.Render(" "+c+" "))
				case j == fd.choice:
					parts = append(parts, st.Render(themes.Plain, "["+c+"]"))
				default:
					parts = append(parts, st.Render(themes.Muted, " "+c+" "))
				}
			}
			b.WriteString(strings.Join(parts, " "))
		case fieldFlags:
			var parts []string
			for j, c := range fd.choices {
				box := "[ ] "
				if fd.flags[j] {
					box = "[x] "
				}
				s := box + c
				if focused && j == fd.choice {
					parts = append(parts, st.TabActive.Render(s))
				} else {
					parts = append(parts, st.Render(themes.Plain, s))
				}
			}
			b.WriteString(strings.Join(parts, "   "))
		case fieldList:
			if len(fd.items) == 0 && !focused {
				b.WriteString(st.Render(themes.Muted, "(none)"))
			}
			for j, item := range fd.items {
				if j > 0 {
					b.WriteString("\n" + strings.Repeat(" ", labelW+2))
				}
				if focused && j == fd.sel {
					b.WriteString(st.Of(themes.Plain, true).Render(pad("• "+item, valueW)))
				} else {
					b.WriteString(st.Render(themes.Plain, truncate("• "+item, valueW)))
				}
			}
			if focused {
				if len(fd.items) > 0 {
					b.WriteString("\n" + strings.Repeat(" ", labelW+2))
				}
				fd.input.SetWidth(valueW - 3)
				b.WriteString(st.Render(themes.Accent, "+ ") + fd.input.View())
			}
		}
		add(b.String())
		if !focused {
			continue
		}
		focusTop, focusBottom = start, len(lines)-1
		if fd.kind == fieldList {
			cursor := start + len(fd.items) // the input line
			if fd.sel >= 0 {
				cursor = start + fd.sel
			}
			focusTop, focusBottom = cursor, cursor
		}
		if fd.help != "" {
			add(strings.Repeat(" ", labelW+2) + st.Render(themes.Muted, truncate(fd.help, valueW)))
			if fd.kind != fieldList || fd.sel < 0 {
				focusBottom = len(lines) - 1 // the input line and its help
			}
		}
	}
	var b strings.Builder
	b.WriteString(f.window(lines, focusTop, focusBottom, inner) + "\n")
	b.WriteString("\n")
	switch {
	case f.saving:
		b.WriteString(st.Render(themes.Info, "saving…"))
	case f.err != "":
		b.WriteString(st.Render(themes.Danger, wrap(f.err, inner)))
	}
	b.WriteString("\n" + f.hintLine())
	title := "New cluster"
	if f.editing != nil {
		title = fmt.Sprintf("Edit cluster %s (version %d)", f.editing.Name, f.version)
	}
	return frame(ctx, title, b.String(), width, false)
}

// window shows the body lines that fit the screen, keeping lines
// top..bottom in view and saying how many are above and below.
func (f *clusterForm) window(lines []string, top, bottom, width int) string {
	// The header the modal is drawn under, the frame's border and title,
	// the blank line and the status and hint lines below the body.
	room := f.ctx.Height - 1 - f.ctx.Styles.Modal.GetVerticalFrameSize() - 2 - 3
	if f.err != "" {
		room -= strings.Count(wrap(f.err, width), "\n")
	}
	if len(lines) <= room || room < 5 {
		f.scroll = 0
		return strings.Join(lines, "\n")
	}
	room -= 2                        // the "more above" and "more below" lines
	bottom = min(bottom, top+room-1) // the top of what must show wins
	f.scroll = min(f.scroll, top)
	f.scroll = max(f.scroll, bottom-room+1)
	f.scroll = max(0, min(f.scroll, len(lines)-room))
	end := min(len(lines), f.scroll+room)
	st := f.ctx.Styles
	more := func(n int, dir string) string {
		if n == 0 {
			return ""
		}
		return st.Render(themes.Muted, dir+" "+plural(n, "more line", "more lines"))
	}
	out := append([]string{more(f.scroll, "↑")}, lines[f.scroll:end]...)
	return strings.Join(append(out, more(len(lines)-end, "↓")), "\n")
}

func (f *clusterForm) hintLine() string {
	fd := f.fields[f.focus]
	switch {
	case fd.kind == fieldList && fd.sel >= 0:
		return hints(f.ctx, "↑/↓", "select", "del/x", "remove", "enter", "edit", "esc", "back to input", "ctrl+s", "save")
	case fd.kind == fieldList:
		return hints(f.ctx, "enter", "add", "↑", "select items", "tab", "next field", "ctrl+s", "save", "esc", "cancel")
	case fd.kind == fieldChoice:
		return hints(f.ctx, "←/→", "choose", "tab", "next field", "ctrl+s", "save", "esc", "cancel")
	case fd.kind == fieldFlags:
		return hints(f.ctx, "←/→", "move", "space", "toggle", "tab", "next field", "ctrl+s", "save", "esc", "cancel")
	}
	return hints(f.ctx, "tab/↓", "next field", "shift+tab/↑", "previous", "ctrl+s", "save", "esc", "cancel")
}

func (f *clusterForm) KeyMap() help.KeyMap {
	b := []key.Binding{keyNextField, keyPrevField, keyUpField, keyDownField, keyAddItem, keyDelItem, keyChoice, keyToggle, keySave, keyCancel}
	return keyMap{short: []key.Binding{keyNextField, keySave, keyCancel}, full: [][]key.Binding{b[:4], b[4:8], b[8:]}}
}
