package themes

import (
	"image/color"

	"charm.land/lipgloss/v2"
)

// Kind is the meaning of a piece of text; the theme decides its look.
type Kind int

const (
	Plain Kind = iota
	Muted
	Accent
	Header
	Good
	Warning
	Danger
	Info
	Marked
	numKinds
)

// Styles are the lipgloss styles of a theme, created once per theme (never
// in View).
type Styles struct {
	Theme Theme

	kinds    [numKinds]lipgloss.Style
	selected [numKinds]lipgloss.Style

	Title       lipgloss.Style // view and modal titles
	Brand       lipgloss.Style // the product name in the header
	TabActive   lipgloss.Style
	TabInactive lipgloss.Style
	TableHeader lipgloss.Style
	Section     lipgloss.Style // section titles in detail views
	Label       lipgloss.Style // field labels in detail views
	Badge       lipgloss.Style // READ-ONLY and similar
	DangerBadge lipgloss.Style
	Modal       lipgloss.Style // modal frame
	DangerModal lipgloss.Style // frame of destructive confirmations
	Key         lipgloss.Style // a key in help
	KeyDesc     lipgloss.Style
	KeySep      lipgloss.Style
	Input       lipgloss.Style // a focused form field's frame
	InputBlur   lipgloss.Style
	Secret      lipgloss.Style // the token shown once
	BarEmpty    lipgloss.Style
}

// NewStyles builds a theme's styles. A nil colour is no colour; where colour
// carries meaning, a text attribute replaces it.
func NewStyles(t Theme) *Styles {
	s := &Styles{Theme: t}
	base := lipgloss.NewStyle()
	fg := func(st lipgloss.Style, c color.Color) lipgloss.Style {
		if c == nil {
			return st
		}
		return st.Foreground(c)
	}
	s.kinds[Plain] = fg(base, t.Foreground)
	s.kinds[Muted] = fg(base, t.Muted)
	if t.Muted == nil {
		s.kinds[Muted] = base.Faint(true)
	}
	s.kinds[Accent] = fg(base, t.Accent).Bold(true)
	s.kinds[Header] = fg(base, t.Header).Bold(true)
	s.kinds[Good] = fg(base, t.Good)
	s.kinds[Warning] = fg(base, t.Warning)
	if t.Warning == nil {
		s.kinds[Warning] = base.Bold(true)
	}
	s.kinds[Danger] = fg(base, t.Danger)
	if t.Danger == nil {
		s.kinds[Danger] = base.Bold(true).Underline(true)
	}
	s.kinds[Info] = fg(base, t.Info)
	s.kinds[Marked] = fg(base, t.Marked).Bold(true)
	for k := range s.kinds {
		st := s.kinds[k]
		if t.SelectedBg == nil {
			st = st.Reverse(true)
		} else {
			st = st.Background(t.SelectedBg)
			if Kind(k) == Plain || Kind(k) == Muted {
				st = fg(st, t.SelectedFg)
			}
		}
		s.selected[k] = st
	}

	s.Title = fg(base, t.Accent).Bold(true)
	s.Brand = s.Title
	onColor := func(bg color.Color) lipgloss.Style {
		if bg == nil || t.AccentText == nil {
			return base.Reverse(true).Bold(true)
		}
		return base.Background(bg).Foreground(t.AccentText).Bold(true)
	}
	s.TabActive = onColor(t.Accent)
	s.Badge = onColor(t.Warning)
	s.DangerBadge = onColor(t.Danger)
	s.TabInactive = s.kinds[Muted]
	s.TableHeader = s.kinds[Header]
	s.Section = fg(base, t.Header).Bold(true)
	s.Label = s.kinds[Muted]
	border := func(c color.Color) lipgloss.Style {
		st := base.Border(lipgloss.RoundedBorder()).Padding(0, 1)
		if c != nil {
			st = st.BorderForeground(c)
		}
		return st
	}
	s.Modal = border(t.Accent)
	s.DangerModal = border(t.Danger)
	if t.Danger == nil {
		s.DangerModal = base.Border(lipgloss.DoubleBorder()).Padding(0, 1)
	}
	s.Key = fg(base, t.Accent)
	if t.Accent == nil {
		s.Key = base.Bold(true)
	}
	s.KeyDesc = s.kinds[Muted]
	s.KeySep = fg(base, t.Border)
	s.Input = border(t.Accent)
	s.InputBlur = border(t.Border)
	s.Secret = fg(base, t.Good).Bold(true)
	s.BarEmpty = fg(base, t.Border)
	return s
}

// Of returns the style of a kind of text, on the selected row or not.
func (s *Styles) Of(k Kind, selected bool) lipgloss.Style {
	if selected {
		return s.selected[k]
	}
	return s.kinds[k]
}

// Render styles text as a kind.
func (s *Styles) Render(k Kind, text string) string { return s.kinds[k].Render(text) }
