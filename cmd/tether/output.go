package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/internal/display"
	"github.com/tetherhq/tether/registry"

	"github.com/tetherhq/tether/internal/humantime"
)

// printJSON writes v as indented JSON: the stable, scriptable output of -o json.
func printJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	// A payload, result or event stored before tether refused bytes that
	// are not UTF-8 is shown with U+FFFD in their place: JSON and YAML
	// readers (and -o yaml itself) refuse such bytes.
	_, err := w.Write(registry.ValidUTF8(buf.Bytes()))
	return err
}

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, headers ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row(headers...)
	return t
}

// row writes one line. Every cell is made safe for the terminal: cells show
// agents' text (status messages, errors, event fields), which is data and
// must never move the cursor, recolour the screen or reorder what follows.
func (t *table) row(cols ...string) {
	safe := make([]string, len(cols))
	for i, c := range cols {
		safe[i] = display.Safe(c)
	}
	fmt.Fprintln(t.tw, strings.Join(safe, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// ago renders how long before now t was ("-" for the zero time), exactly
// as the console does (internal/humantime).
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return humantime.Relative(now, t)
}

// until renders how long after now t is ("-" for the zero time).
func until(now, t time.Time) string { return ago(now, t) }

// humanDuration renders a span in its largest whole unit, rounded to the
// nearest (a token issued for 24h shows "in 24h", not "in 23h" a second
// later).
func humanDuration(d time.Duration) string { return humantime.Duration(humantime.Round(d)) }

// list renders a string list for a table cell.
func list(v []string) string {
	if len(v) == 0 {
		return "-"
	}
	return strings.Join(v, ",")
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// newKV returns a table without a header: aligned "Key:\tvalue" rows for the
// detail views (cluster get, job get), or rows whose header is printed only
// once (--follow).
func newKV(w io.Writer) *table {
	return &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
}

// printJSONLine writes v as one line of JSON: the output of --follow, so that
// a script can read one object per line as entries arrive.
func printJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(registry.ValidUTF8(b), '\n')) // as printJSON
	return err
}

// failf is a command's own error (not the registry's): exit code 1 with the
// message as one sentence. run() would show a plain error as "internal error",
// which is right for bugs but not for mistakes the user can fix.
func failf(format string, args ...any) error {
	return &exitCodeError{code: exitError, msg: sentence(fmt.Sprintf(format, args...))}
}

// oneLine folds text an agent or a user wrote (which may span lines) into a
// single line of at most max runes, so that it fits a table cell or a
// one-sentence error.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}

// indentJSON renders a JSON document for reading; text that is not valid
// JSON is returned as is. Each line is made safe for the terminal: JSON may
// carry bidirectional overrides and other characters raw.
func indentJSON(raw []byte, prefix string) string {
	var buf bytes.Buffer
	out := prefix + string(raw)
	if err := json.Indent(&buf, raw, prefix, "  "); err == nil {
		out = prefix + buf.String()
	}
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		lines[i] = display.Safe(l)
	}
	return strings.Join(lines, "\n")
}

// orDash renders an empty table cell as "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// stamp renders a time as RFC 3339 and how long ago or ahead it is, for the
// detail views ("-" for the zero time).
func stamp(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return rfc3339(t) + " (" + ago(now, t) + ")"
}

// durationValue is a duration flag that takes Go's syntax (90s, 15m, 24h) and
// whole days (7d), which Go's syntax lacks and token lifetimes are naturally
// written in. A malformed value is a flag error: exit code 2.
type durationValue struct{ d *time.Duration }

func newDuration(p *time.Duration, def time.Duration) durationValue {
	*p = def
	return durationValue{p}
}

func (v durationValue) Type() string { return "duration" }

func (v durationValue) String() string {
	if v.d == nil || *v.d == 0 {
		return ""
	}
	s := v.d.String()
	// 24h0m0s reads better as 24h.
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func (v durationValue) Set(s string) error {
	s = strings.TrimSpace(s)
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return fmt.Errorf("%q is not a duration: use a whole number of days such as 7d, or a duration such as 90s, 15m or 24h", s)
		}
		if n > math.MaxInt64/int(24*time.Hour) {
			// time.Duration(n) * 24h would wrap around: 106752d to a
			// negative duration, 213504d to 25 minutes.
			return fmt.Errorf("%q is longer than any duration tether can hold (about 290 years)", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return fmt.Errorf("%q is not a duration: use a duration such as 90s, 15m, 24h or 7d", s)
		}
	}
	if d < 0 {
		return fmt.Errorf("%q is negative: a duration must be positive", s)
	}
	*v.d = d
	return nil
}

// groupCommand is a command that only holds subcommands. It runs (printing
// its help) so that a mistyped subcommand is a usage error instead of cobra's
// silent help and exit code 0.
func groupCommand(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(subs...)
	return cmd
}

// stdinIsTerminal reports whether r is an interactive terminal, where a
// destructive command may ask for confirmation. A variable so that an
// in-process test can stand in for a terminal.
var stdinIsTerminal = func(r io.Reader) bool { return isTerminal(r) }

// isTerminal reports whether stream, standard input or output, is a
// terminal.
func isTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
