package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// serve is `tether serve` in its own process.
type serve struct {
	cmd     *exec.Cmd
	addr    string
	diag    string // --diag-listen's address: /metrics and pprof
	metrics *http.Client
}

var addrPattern = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

// startServe runs serve over db with its default caps and limits: the
// fleet comes from many addresses, each under the per-address caps. diag is
// the address of serve's --diag-listen: /metrics without a token (the agent
// listener's takes an admin token), and /debug/pprof for -profile.
func startServe(ctx context.Context, bin, db, diag string) (*serve, error) {
	args := []string{"--db", db, "serve", "--listen", "127.0.0.1:0", "--log-format", "json", "--diag-listen", diag}
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &serve{cmd: cmd, diag: diag, metrics: &http.Client{Timeout: 2 * time.Minute}}
	found := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stderr)
		lines.Buffer(make([]byte, 64<<10), 1<<20)
		said := 0
		for lines.Scan() {
			l := lines.Text()
			// (--diag-listen says where it listens too.)
			if a := addrPattern.FindString(l); a != "" && a != diag && strings.Contains(l, "listening") {
				select {
				case found <- a:
				default:
				}
				continue
			}
			if said < 20 && (strings.Contains(l, `"level":"WARN"`) || strings.Contains(l, `"level":"ERROR"`)) { // a few of serve's warnings
				said++
				fmt.Fprintln(os.Stderr, "serve:", l)
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case s.addr = <-found:
		return s, nil
	case <-time.After(time.Minute):
	case <-ctx.Done():
	}
	s.stop()
	return nil, fmt.Errorf("tether serve did not say where it listens within a minute")
}

func (s *serve) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		s.cmd.Process.Kill()
		<-done
	}
}

// rss is serve's resident set size in bytes.
func (s *serve) rss() int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// heldPolls reads serve's held long-poll gauge (-1 when it cannot).
func (s *serve) heldPolls() int {
	resp, err := s.metrics.Get("http://" + s.diag + "/metrics")
	if err != nil {
		return -1
	}
	defer func() {
		io.Copy(io.Discard, resp.Body) // the rest of the scrape, so that serve can finish writing it
		resp.Body.Close()
	}()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "tether_agent_longpolls_held "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int(f)
		}
	}
	return -1
}

// profile saves serve's CPU profile over d and an execution trace of its
// first 5 s into dir, and this process's CPU profile over the same d.
func (s *serve) profile(ctx context.Context, dir string, d time.Duration) {
	var wg sync.WaitGroup
	get := func(path, file string) {
		defer wg.Done()
		c := &http.Client{Timeout: d + time.Minute}
		resp, err := c.Get("http://" + s.diag + path)
		if err != nil {
			logf("profile %s: %v", path, err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(dir, file))
		if err != nil {
			logf("profile: %v", err)
			return
		}
		defer f.Close()
		io.Copy(f, resp.Body)
	}
	wg.Add(2)
	go get(fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds())), "serve.cpu.pprof")
	go get("/debug/pprof/trace?seconds=5", "serve.trace")
	if f, err := os.Create(filepath.Join(dir, "agents.cpu.pprof")); err == nil {
		if pprof.StartCPUProfile(f) == nil {
			sleep(ctx, d)
			pprof.StopCPUProfile()
		}
		f.Close()
	}
	wg.Wait()
	logf("profiles written to %s", dir)
}

// freeAddr is a loopback address nothing listens on now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
