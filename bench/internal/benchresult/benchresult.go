// Package benchresult is what the benchmark commands (make bench, make
// bench-fleet) write alike: a row of bench/results/*.json, its figures'
// rounding, and the module they run in.
package benchresult

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Result is one row of a results file (bench/results/latest.json,
// fleet.json).
type Result struct {
	Scenario string  `json:"scenario"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"`
	Target   string  `json:"target"`
	OK       bool    `json:"ok"`
	Runs     int     `json:"runs"`
}

// Round keeps a figure's four significant digits.
func Round(v float64) float64 {
	p, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	return p
}

// ModuleRoot is the directory of the tether module the command runs in;
// outside it, the error says to run target (make bench, make bench-fleet)
// from inside.
func ModuleRoot(target string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run %s from inside the tether module", target)
	}
	return filepath.Dir(mod), nil
}

// Write writes results to bench/results/name under the module's root and
// returns the file's path.
func Write(root, name string, results []Result) (string, error) {
	path := filepath.Join(root, "bench", "results", name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	b, _ := json.MarshalIndent(results, "", "  ")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	return path, nil
}
