package themes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// User theme files live in Dir() as NAME.json:
//
//	{
//	  "name": "solarized",     optional; defaults to the file's name
//	  "base": "dark",          optional; the built-in theme to start from (default dark)
//	  "dark": true,            optional; whether it is meant for a dark background (default: the base's)
//	  "colors": {              any subset of the colour names below
//	    "foreground": "#839496",
//	    "accent": "#268bd2",
//	    "selectedBackground": "none"
//	  }
//	}
//
// Colour names: foreground, muted, border, accent, accentText,
// selectedBackground, selectedForeground, marked, header, good, warning,
// danger, info. A colour is "#rrggbb", "#rgb", an ANSI colour number from 0 to
// 255, or "none" (no colour: the styles fall back on bold, underline and
// reverse video). A colour not listed keeps the base theme's value.

// fileFormat is the JSON shape of a theme file.
type fileFormat struct {
	Name   string                     `json:"name"`
	Base   string                     `json:"base"`
	Dark   *bool                      `json:"dark"`
	Colors map[string]json.RawMessage `json:"colors"`
}

// Dir is where user theme files are looked for:
// $XDG_CONFIG_HOME/tether/themes (~/.config/tether/themes on Linux,
// ~/Library/Application Support/tether/themes on macOS).
func Dir() (string, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "tether", "themes"), nil
}

// Load returns the theme called name: a built-in one, a path to a theme file
// (a name containing a path separator or ending in .json), or NAME.json in dir.
func Load(name, dir string) (Theme, error) {
	name = strings.TrimSpace(name)
	if t, ok := Builtin(name); ok {
		return t, nil
	}
	path := name
	if !strings.ContainsRune(name, filepath.Separator) && !strings.HasSuffix(name, ".json") {
		if dir == "" {
			return Theme{}, fmt.Errorf("theme %q is not built in (%s), and there is no user configuration directory to look for %s.json in",
				name, strings.Join(BuiltinNames, ", "), name)
		}
		path = filepath.Join(dir, name+".json")
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Theme{}, fmt.Errorf("theme %q is not built in (%s), and there is no theme file %s",
			name, strings.Join(BuiltinNames, ", "), path)
	}
	if err != nil {
		return Theme{}, fmt.Errorf("theme file %s: %w", path, err)
	}
	t, err := Parse(data, strings.TrimSuffix(filepath.Base(path), ".json"))
	if err != nil {
		return Theme{}, fmt.Errorf("theme file %s: %w", path, err)
	}
	return t, nil
}

// Parse reads a theme file's contents. defaultName names the theme when the
// file does not. Errors say which field is wrong and why.
func Parse(data []byte, defaultName string) (Theme, error) {
	var f fileFormat
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Theme{}, describeJSONError(data, err)
	}
	if dec.More() {
		return Theme{}, errors.New("extra data after the theme's JSON object")
	}
	base := f.Base
	if base == "" {
		base = NameDark
	}
	t, ok := Builtin(base)
	if !ok || strings.EqualFold(base, NameAuto) {
		return Theme{}, fmt.Errorf("base %q is not a built-in theme: use %s, %s, %s or %s", f.Base, NameDark, NameLight, NameHighContrast, NameMono)
	}
	t.Name = defaultName
	if f.Name != "" {
		t.Name = f.Name
	}
	if f.Dark != nil {
		t.Dark = *f.Dark
	}
	fields := t.colorFields()
	for key, raw := range f.Colors {
		i := -1
		for j, fd := range fields {
			if strings.EqualFold(fd.name, key) {
				i = j
			}
		}
		if i < 0 {
			return Theme{}, fmt.Errorf("colors.%s is not a theme colour; the colours are %s", key, strings.Join(ColorFieldNames(), ", "))
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return Theme{}, fmt.Errorf("colors.%s must be a string such as \"#268bd2\", \"12\" or \"none\", not %s", key, bytes.TrimSpace(raw))
		}
		c, err := ParseColor(s)
		if err != nil {
			return Theme{}, fmt.Errorf("colors.%s: %w", key, err)
		}
		*fields[i].ptr = c
	}
	return t, nil
}

func describeJSONError(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		line, col := position(data, se.Offset)
		return fmt.Errorf("line %d, column %d: malformed JSON: %v", line, col, se)
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return fmt.Errorf("a theme file holds one JSON object, not a JSON %s", te.Value)
		}
		return fmt.Errorf("%s must be a %s, not a JSON %s", field, kindName(te.Type.Kind().String()), te.Value)
	case errors.Is(err, io.EOF):
		return errors.New("the file is empty; a theme file holds one JSON object")
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown field %s; a theme file has the fields name, base, dark and colors", msg)
	}
	return err
}

func kindName(k string) string {
	switch k {
	case "map", "struct":
		return "object"
	case "bool":
		return "boolean (true or false)"
	}
	return k
}

func position(data []byte, offset int64) (line, col int) {
	line, col = 1, 1
	for i := int64(0); i < offset-1 && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}
