package themes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"charm.land/lipgloss/v2"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestSelect(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ocean.json"), []byte(`{"colors": {"accent": "#0000ff"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		flag     string
		env      map[string]string
		want     string
		auto     bool
		noColor  bool
		source   string
		wantFail string
	}{
		{name: "default is auto", want: NameDark, auto: true, source: "default"},
		{name: "NO_COLOR any value", env: map[string]string{"NO_COLOR": "0"}, want: NameMono, noColor: true, source: EnvNoColor},
		{name: "NO_COLOR empty is unset", env: map[string]string{"NO_COLOR": ""}, want: NameDark, auto: true, source: "default"},
		{name: "TETHER_THEME", env: map[string]string{"TETHER_THEME": "light"}, want: NameLight, source: EnvTheme},
		{name: "NO_COLOR beats TETHER_THEME", env: map[string]string{"TETHER_THEME": "light", "NO_COLOR": "yes"}, want: NameMono, noColor: true, source: EnvNoColor},
		{name: "the flag beats NO_COLOR", flag: "high-contrast", env: map[string]string{"NO_COLOR": "1"}, want: NameHighContrast, source: "--theme"},
		{name: "flag auto", flag: "auto", env: map[string]string{"TETHER_THEME": "light"}, want: NameDark, auto: true, source: "--theme"},
		{name: "flag mono means no colour", flag: "mono", want: NameMono, noColor: true, source: "--theme"},
		{name: "user theme", flag: "ocean", want: "ocean", source: "--theme"},
		{name: "user theme from the environment", env: map[string]string{"TETHER_THEME": "ocean"}, want: "ocean", source: EnvTheme},
		{name: "unknown", flag: "neon", wantFail: `theme "neon" is not built in (auto, dark, light, high-contrast, mono), and there is no theme file ` + filepath.Join(dir, "neon.json")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Select(tc.flag, env(tc.env), dir)
			if tc.wantFail != "" {
				if err == nil || err.Error() != tc.wantFail {
					t.Fatalf("got %v, want error %q", err, tc.wantFail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Theme.Name != tc.want || got.Auto != tc.auto || got.NoColor != tc.noColor || got.Source != tc.source {
				t.Errorf("got %s auto=%v nocolor=%v source=%s, want %s auto=%v nocolor=%v source=%s",
					got.Theme.Name, got.Auto, got.NoColor, got.Source, tc.want, tc.auto, tc.noColor, tc.source)
			}
		})
	}
}

func TestParseThemeFile(t *testing.T) {
	light := Light()
	got, err := Parse([]byte(`{
  "name": "paper",
  "base": "light",
  "colors": {"accent": "#123", "Danger": "196", "selectedBackground": "none"}
}`), "file")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "paper" || got.Dark || got.Accent != lipgloss.Color("#123") || got.Danger != lipgloss.Color("196") ||
		got.SelectedBg != nil || got.Good != light.Good {
		t.Errorf("got %+v", got)
	}
	if got, _ := Parse([]byte(`{}`), "plain"); got.Name != "plain" || got.Accent != Dark().Accent {
		t.Errorf("an empty file is the dark theme named after the file: %+v", got)
	}
}

// TestParseThemeFileErrors: a bad theme file says which field is wrong and
// why. Each case also seeds FuzzParse.
var badThemes = []struct {
	name, data, want string
}{
	{"unknown colour", `{"colors": {"acent": "#fff"}}`, "colors.acent is not a theme colour; the colours are foreground, muted,"},
	{"bad hex", `{"colors": {"accent": "#12"}}`, `colors.accent: "#12" is not a colour: a hex colour is #rrggbb or #rgb`},
	{"bad hex digits", `{"colors": {"good": "#gg0000"}}`, `colors.good: "#gg0000" is not a colour`},
	{"number too big", `{"colors": {"info": "300"}}`, `colors.info: "300" is not a colour: ANSI colour numbers go from 0 to 255`},
	{"a name", `{"colors": {"info": "blue"}}`, `colors.info: "blue" is not a colour: use #rrggbb, #rgb, an ANSI colour number from 0 to 255, or "none"`},
	{"not a string", `{"colors": {"muted": 12}}`, `colors.muted must be a string such as "#268bd2", "12" or "none", not 12`},
	{"unknown field", `{"colours": {}}`, `unknown field "colours"; a theme file has the fields name, base, dark and colors`},
	{"bad base", `{"base": "solarized"}`, `base "solarized" is not a built-in theme: use dark, light, high-contrast or mono`},
	{"dark not a boolean", `{"dark": "yes"}`, "dark must be a boolean (true or false), not a JSON string"},
	{"syntax", "{\n  \"name\": \"x\",\n  \"colors\": {,}\n}", "line 3, column 14: malformed JSON"},
	{"not an object", `["dark"]`, "a theme file holds one JSON object, not a JSON array"},
	{"empty", ``, "the file is empty"},
	{"trailing data", `{} {}`, "extra data after the theme's JSON object"},
}

func TestParseThemeFileErrors(t *testing.T) {
	for _, tc := range badThemes {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.data), "bad")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(path, []byte(`{"colors": {"accent": "#12"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load("broken", dir)
	if err == nil || !strings.HasPrefix(err.Error(), "theme file "+path+": colors.accent") {
		t.Errorf("got %v, want an error naming the file and the field", err)
	}
	// A path works too.
	if _, err := Load(path, ""); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("by path: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, tc := range badThemes {
		f.Add([]byte(tc.data))
	}
	f.Add([]byte(`{"base": "mono", "colors": {"accent": "#abcdef", "good": "2"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		th, err := Parse(data, "fuzz")
		if err != nil {
			if err.Error() == "" {
				t.Error("an empty error message")
			}
			return
		}
		NewStyles(th) // any theme that parses must build styles
	})
}

func TestParseColor(t *testing.T) {
	for in, ok := range map[string]bool{"#fff": true, "#A0b1C2": true, "0": true, "255": true, "none": true, "": true,
		"256": false, "-1": false, "#ff": false, "red": false, "#fffffff": false, "1.5": false} {
		_, err := ParseColor(in)
		if (err == nil) != ok {
			t.Errorf("ParseColor(%q): err %v, want ok=%v", in, err, ok)
		}
	}
}

func TestStylesWithoutColourUseAttributes(t *testing.T) {
	s := NewStyles(Mono())
	for _, st := range []struct {
		name string
		out  string
	}{
		{"selected", s.Of(Plain, true).Render("x")},
		{"danger", s.Render(Danger, "x")},
		{"badge", s.Badge.Render("x")},
	} {
		if st.out == "x" {
			t.Errorf("mono %s has no attribute: a selection or an error must still stand out", st.name)
		}
		if strings.Contains(st.out, "38;") || strings.Contains(st.out, "48;") {
			t.Errorf("mono %s has a colour: %q", st.name, st.out)
		}
	}
	for _, name := range BuiltinNames {
		th, ok := Builtin(name)
		if !ok {
			t.Fatalf("%s is not built in", name)
		}
		NewStyles(th)
	}
}
