package themes

import "strings"

// Choice is the theme the console starts with, and why.
type Choice struct {
	Theme Theme
	// Auto means follow the terminal's background: Theme is Dark until the
	// terminal answers the background query, then Dark or Light.
	Auto bool
	// NoColor means NO_COLOR asked for no colour at all: the console also
	// renders with the ASCII colour profile, so nothing coloured gets out.
	NoColor bool
	// Source says where the choice came from, for error messages and the
	// console's about line.
	Source string
}

// Environment variables read by Select.
const (
	EnvTheme   = "TETHER_THEME"
	EnvNoColor = "NO_COLOR"
)

// Select picks the theme, in this order: the --theme flag (an explicit
// request wins over everything, as no-color.org recommends), NO_COLOR set to
// any non-empty value (mono), TETHER_THEME, and finally auto (dark or light
// from the terminal's background). Names other than the built-in ones are
// user theme files, looked up in dir (see Load).
func Select(flag string, getenv func(string) string, dir string) (Choice, error) {
	pick := func(name, source string) (Choice, error) {
		if strings.EqualFold(strings.TrimSpace(name), NameAuto) {
			return Choice{Theme: Dark(), Auto: true, Source: source}, nil
		}
		t, err := Load(name, dir)
		if err != nil {
			return Choice{}, err
		}
		return Choice{Theme: t, NoColor: source == EnvNoColor || t.Name == NameMono, Source: source}, nil
	}
	if strings.TrimSpace(flag) != "" {
		return pick(flag, "--theme")
	}
	if getenv(EnvNoColor) != "" {
		return pick(NameMono, EnvNoColor)
	}
	if v := strings.TrimSpace(getenv(EnvTheme)); v != "" {
		return pick(v, EnvTheme)
	}
	return Choice{Theme: Dark(), Auto: true, Source: "default"}, nil
}
