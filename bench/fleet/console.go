package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// consoleFrame is the console's first frame over the fleet: the tui
// package's BenchmarkFirstFrameFleet (BenchmarkFirstFrame's measure: from
// opening the database to the first frame with the jobs and the fleet's
// counts), run over the fleet's file while serve holds its polls.
type consoleFrame struct {
	ms  float64 // 0: not measured
	err string
}

func firstFrame(testBinary, db string) consoleFrame {
	cmd := exec.Command(testBinary, "-test.run", "^$", "-test.bench", "^BenchmarkFirstFrameFleet$", "-test.benchtime", "3x")
	cmd.Env = append(os.Environ(), "TETHER_BENCH_FLEET_DB="+db)
	out, err := cmd.CombinedOutput()
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		for i := 2; i+1 < len(f); i++ {
			if f[i+1] == "ms/first-frame" && strings.HasPrefix(f[0], "BenchmarkFirstFrameFleet") {
				v, perr := strconv.ParseFloat(f[i], 64)
				if perr == nil {
					return consoleFrame{ms: v}
				}
			}
		}
	}
	msg := strings.TrimSpace(string(out))
	if err != nil {
		msg = err.Error() + ": " + msg
	}
	return consoleFrame{err: msg}
}
