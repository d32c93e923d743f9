// Package buildinfo holds what the build stamped into the binary: the
// release version, the commit and the build date. The Makefile, the
// Dockerfile and GoReleaser set them with
//
//	-ldflags "-X github.com/tetherhq/tether/internal/buildinfo.Version=v1.2.3
//	          -X github.com/tetherhq/tether/internal/buildinfo.Commit=abc1234
//	          -X github.com/tetherhq/tether/internal/buildinfo.Date=2026-11-24T23:00:00Z"
//
// A plain `go build` or `go install` leaves them empty; Get then falls back
// to what the Go toolchain recorded (the module version of `go install
// ...@v1.2.3`, the VCS revision and time when built from a checkout).
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Set at link time; see the package comment.
var (
	Version string
	Commit  string
	Date    string
)

// Info is the build's identity, as `tether version` and tether_build_info
// report it.
type Info struct {
	Version   string `json:"version" yaml:"version"`
	Commit    string `json:"commit" yaml:"commit"`
	Date      string `json:"date" yaml:"date"`
	GoVersion string `json:"goVersion" yaml:"goVersion"`
	Platform  string `json:"platform" yaml:"platform"`
}

// Get returns the stamped values, completed from the Go build information
// where the linker set none: "dev" and "unknown" when nothing is known.
func Get() Info {
	i := Info{Version: Version, Commit: Commit, Date: Date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && i.Commit == "":
				i.Commit = s.Value
			case s.Key == "vcs.time" && i.Date == "":
				i.Date = s.Value
			}
		}
	}
	if i.Version == "" {
		i.Version = "dev"
	}
	if i.Commit == "" {
		i.Commit = "unknown"
	}
	if i.Date == "" {
		i.Date = "unknown"
	}
	return i
}

// Short is the version alone, for user agents and log lines.
func Short() string { return Get().Version }
