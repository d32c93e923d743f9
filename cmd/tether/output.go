package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// printJSON writes v as indented JSON: the stable, scriptable output of -o json.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, headers ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row(headers...)
	return t
}

func (t *table) row(cols ...string) { fmt.Fprintln(t.tw, strings.Join(cols, "\t")) }

func (t *table) flush() error { return t.tw.Flush() }

// ago renders how long before now t was ("-" for the zero time).
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + humanDuration(-d)
	}
	return humanDuration(d) + " ago"
}

// until renders how long after now t is ("-" for the zero time).
func until(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(now)
	if d < 0 {
		return humanDuration(-d) + " ago"
	}
	return "in " + humanDuration(d)
}

func humanDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

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
