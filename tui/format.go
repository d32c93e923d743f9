package tui

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/internal/humantime"
	"github.com/tetherhq/tether/registry"
)

// humanDuration is a duration in its largest whole unit: 42s, 5m, 3h, 2d
// (internal/humantime, shared with the CLI).
func humanDuration(d time.Duration) string { return humantime.Duration(d) }

// ago renders how long before now t was: "12s ago", or "never".
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return humantime.Relative(now, t)
}

// age is a compact ago for table cells: "12s", "-" for never.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return humanDuration(now.Sub(t))
}

// until renders how long after now t is: "in 3d", or "3d ago" when past.
func until(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return humantime.Relative(now, t)
}

// roundDuration rounds d to the unit humanDuration shows it in.
func roundDuration(d time.Duration) time.Duration { return humantime.Round(d) }

// stamp is a timestamp as the console shows it: UTC, to the second.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// clock is a time of day in UTC.
func clock(t time.Time) string { return t.UTC().Format("15:04:05") }

// thousands formats n with thousands separators: 1,000,000.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// plural is "1 job", "2 jobs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return thousands(int64(n)) + " " + many
}

// truncate cuts s (which may hold ANSI styles) to width cells, with an
// ellipsis.
func truncate(s string, width int) string {
	if width <= 0 {
		return ""
	}
	return ansi.Truncate(s, width, "…")
}

// pad fills s (plain or styled) with spaces to exactly width cells,
// truncating it first if needed.
func pad(s string, width int) string {
	w := ansi.StringWidth(s)
	if w > width {
		s = truncate(s, width)
		w = ansi.StringWidth(s)
	}
	return s + strings.Repeat(" ", max(0, width-w))
}

// padLeft right-aligns s in width cells.
func padLeft(s string, width int) string {
	w := ansi.StringWidth(s)
	if w > width {
		return truncate(s, width)
	}
	return strings.Repeat(" ", width-w) + s
}

// listOrNone renders an allowlist.
func listOrNone(v []string) string {
	if len(v) == 0 {
		return "(none)"
	}
	return strings.Join(v, ", ")
}

// errText is the message the console shows for an error: the registry's
// caller-facing message, as the CLI prints it.
func errText(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// Not "internal error": at 3 a.m. the difference matters.
		return "no answer in time: the database (or the server) is not answering"
	}
	return registry.ErrorMessage(err)
}

// stateLabel is a job state as people read it.
func stateLabel(s registry.JobState) string {
	return strings.ReplaceAll(string(s), "_", " ")
}

// durationInput parses what a person types for a duration: Go syntax (90s,
// 5m, 1h30m) or a bare number of minutes.
func durationInput(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Minute, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: write 90s, 5m or 1h30m", s)
	}
	return d, nil
}

func itoa(n int) string { return strconv.Itoa(n) }
