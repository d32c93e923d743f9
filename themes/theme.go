// Package themes holds the console's colours: one Theme struct (a palette),
// the built-in themes, user theme files, the choice between them, and the
// lipgloss styles derived from a theme. It imports nothing from tui.
//
// A theme is a palette of named colours. A colour left unset (nil) means "no
// colour": the styles then fall back on text attributes (reverse video for the
// selection, bold for warnings, bold and underline for errors), which is how
// the mono theme works and how NO_COLOR is honoured.
package themes

import (
	"fmt"
	"image/color"
	"strings"

	"charm.land/lipgloss/v2"
)

// Theme is a named palette. Every colour may be nil (no colour).
type Theme struct {
	Name string
	// Dark says whether the theme is meant for a dark background; the help
	// component and text inputs pick their defaults from it.
	Dark bool

	Foreground color.Color // ordinary text
	Muted      color.Color // secondary text: ids, ages, hints
	Border     color.Color // borders and separators
	Accent     color.Color // brand, the active tab, keys in help
	AccentText color.Color // text drawn on the accent colour
	SelectedBg color.Color // the selected row's background (nil: reverse video)
	SelectedFg color.Color // the selected row's text
	Marked     color.Color // rows marked for a bulk action
	Header     color.Color // table headers and section titles
	Good       color.Color // active, succeeded, True conditions
	Warning    color.Color // pending, silent, grace, stuck
	Danger     color.Color // failed, expired leases, False conditions, errors
	Info       color.Color // in progress, queued, informational badges
}

// Built-in theme names. Auto picks dark or light from the terminal's
// background.
const (
	NameAuto         = "auto"
	NameDark         = "dark"
	NameLight        = "light"
	NameHighContrast = "high-contrast"
	NameMono         = "mono"
)

// BuiltinNames lists the built-in themes, auto first.
var BuiltinNames = []string{NameAuto, NameDark, NameLight, NameHighContrast, NameMono}

// Dark is the default theme on a dark background.
func Dark() Theme {
	return Theme{
		Name: NameDark, Dark: true,
		Foreground: lipgloss.Color("#d7dae0"),
		Muted:      lipgloss.Color("#8a909c"),
		Border:     lipgloss.Color("#4b5263"),
		Accent:     lipgloss.Color("#61afef"),
		AccentText: lipgloss.Color("#1e2127"),
		SelectedBg: lipgloss.Color("#3e4451"),
		SelectedFg: lipgloss.Color("#ffffff"),
		Marked:     lipgloss.Color("#c678dd"),
		Header:     lipgloss.Color("#e5c07b"),
		Good:       lipgloss.Color("#98c379"),
		Warning:    lipgloss.Color("#e5c07b"),
		Danger:     lipgloss.Color("#ef596f"),
		Info:       lipgloss.Color("#56b6c2"),
	}
}

// Light is the default theme on a light background.
func Light() Theme {
	return Theme{
		Name: NameLight, Dark: false,
		Foreground: lipgloss.Color("#24292f"),
		Muted:      lipgloss.Color("#6e7781"),
		Border:     lipgloss.Color("#afb8c1"),
		Accent:     lipgloss.Color("#0550ae"),
		AccentText: lipgloss.Color("#ffffff"),
		SelectedBg: lipgloss.Color("#d0e3ff"),
		SelectedFg: lipgloss.Color("#000000"),
		Marked:     lipgloss.Color("#8250df"),
		Header:     lipgloss.Color("#953800"),
		Good:       lipgloss.Color("#1a7f37"),
		Warning:    lipgloss.Color("#9a6700"),
		Danger:     lipgloss.Color("#cf222e"),
		Info:       lipgloss.Color("#0969da"),
	}
}

// HighContrast uses the terminal's basic colours at full strength, for
// projectors, bright rooms and tired eyes.
func HighContrast() Theme {
	return Theme{
		Name: NameHighContrast, Dark: true,
		Foreground: lipgloss.Color("15"),
		Muted:      lipgloss.Color("7"),
		Border:     lipgloss.Color("15"),
		Accent:     lipgloss.Color("11"),
		AccentText: lipgloss.Color("0"),
		SelectedBg: lipgloss.Color("15"),
		SelectedFg: lipgloss.Color("0"),
		Marked:     lipgloss.Color("13"),
		Header:     lipgloss.Color("14"),
		Good:       lipgloss.Color("10"),
		Warning:    lipgloss.Color("11"),
		Danger:     lipgloss.Color("9"),
		Info:       lipgloss.Color("14"),
	}
}

// Mono has no colours at all: text attributes only. NO_COLOR selects it.
func Mono() Theme { return Theme{Name: NameMono, Dark: true} }

// Builtin returns the built-in theme with that name; "auto" returns Dark
// (the console switches to Light when the terminal reports a light
// background).
func Builtin(name string) (Theme, bool) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case NameDark, NameAuto, "":
		return Dark(), true
	case NameLight:
		return Light(), true
	case NameHighContrast, "highcontrast", "high_contrast":
		return HighContrast(), true
	case NameMono, "none", "no-color":
		return Mono(), true
	}
	return Theme{}, false
}

// ForBackground is the auto theme's choice for a terminal background.
func ForBackground(dark bool) Theme {
	if dark {
		return Dark()
	}
	return Light()
}

// colorFields names every colour of a theme, as user theme files spell them.
func (t *Theme) colorFields() []struct {
	name string
	ptr  *color.Color
} {
	return []struct {
		name string
		ptr  *color.Color
	}{
		{"foreground", &t.Foreground},
		{"muted", &t.Muted},
		{"border", &t.Border},
		{"accent", &t.Accent},
		{"accentText", &t.AccentText},
		{"selectedBackground", &t.SelectedBg},
		{"selectedForeground", &t.SelectedFg},
		{"marked", &t.Marked},
		{"header", &t.Header},
		{"good", &t.Good},
		{"warning", &t.Warning},
		{"danger", &t.Danger},
		{"info", &t.Info},
	}
}

// ColorFieldNames lists the colour names a theme file may set.
func ColorFieldNames() []string {
	var t Theme
	var out []string
	for _, f := range t.colorFields() {
		out = append(out, f.name)
	}
	return out
}

// ParseColor reads a colour as theme files write it: "#rrggbb", "#rgb", an
// ANSI colour number from 0 to 255, or "none" (or "") for no colour.
func ParseColor(s string) (color.Color, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" || strings.EqualFold(s, "none"):
		return nil, nil
	case strings.HasPrefix(s, "#"):
		hex := s[1:]
		if (len(hex) != 6 && len(hex) != 3) || strings.Trim(strings.ToLower(hex), "0123456789abcdef") != "" {
			return nil, fmt.Errorf("%q is not a colour: a hex colour is #rrggbb or #rgb", s)
		}
		return lipgloss.Color(s), nil
	}
	n := 0
	if len(s) > 3 || strings.Trim(s, "0123456789") != "" {
		return nil, fmt.Errorf("%q is not a colour: use #rrggbb, #rgb, an ANSI colour number from 0 to 255, or \"none\"", s)
	}
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	if n > 255 {
		return nil, fmt.Errorf("%q is not a colour: ANSI colour numbers go from 0 to 255", s)
	}
	return lipgloss.Color(s), nil
}
