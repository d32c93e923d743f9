package humantime

import (
	"testing"
	"time"
)

func TestRelative(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		t    time.Time
		want string
	}{
		{now, "0s ago"},
		{now.Add(-42 * time.Second), "42s ago"},
		{now.Add(-90 * time.Second), "1m ago"},
		{now.Add(-47 * time.Hour), "47h ago"},
		{now.Add(-50 * time.Hour), "2d ago"},
		{now.Add(24*time.Hour - time.Second), "in 24h"},
		{now.Add(30*24*time.Hour - time.Minute), "in 30d"},
		{now.Add(90 * time.Second), "in 2m"},
		{now.Add(300 * time.Millisecond), "0s ago"},
		{now.Add(700 * time.Millisecond), "in 1s"},
	} {
		if got := Relative(now, tc.t); got != tc.want {
			t.Errorf("Relative(%s) = %q, want %q", tc.t.Sub(now), got, tc.want)
		}
	}
}

func TestWait(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0ms", 340 * time.Millisecond: "340ms", 1999 * time.Millisecond: "1.9s",
		42 * time.Second: "42.0s", 90 * time.Second: "1m", 3 * time.Hour: "3h",
	} {
		if got := Wait(d); got != want {
			t.Errorf("Wait(%s) = %q, want %q", d, got, want)
		}
	}
}
