package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/tetherhq/tether/apiclient"
)

// State is what an agent keeps in its state directory: where tether is, the
// credential it issued, and the payload-signing keys the agent trusts (see
// verify.go). The file is written atomically with mode 0600.
type State struct {
	Server     string               `json:"server"`
	Credential apiclient.Credential `json:"credential"`
	// TrustedKeys: the key pinned at register, then the keys it (or a key
	// it endorsed) introduced, oldest first. A state file written before
	// key continuity has none: its credential's serverPublicKey is taken.
	TrustedKeys []apiclient.JWK `json:"trustedKeys,omitempty"`
}

// pinFirst pins cred's serverPublicKey when st trusts no key yet: at
// register, or at the first rotation after the cluster began to sign.
// Afterwards a key is trusted only when a trusted key endorsed it, so that
// an answer altered on the way cannot swap the anchor.
func (st *State) pinFirst(cred apiclient.Credential) bool {
	if len(st.TrustedKeys) > 0 || cred.ServerPublicKey == nil {
		return false
	}
	st.TrustedKeys = []apiclient.JWK{pinned(*cred.ServerPublicKey)}
	return true
}

const (
	stateFile  = "credential.json"
	ledgerFile = "ledger.log"
)

// SaveState writes the state file atomically (temporary file, fsync, rename),
// creating the directory with mode 0700 if needed.
func SaveState(dir string, st State) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create state directory %s: %w", dir, err)
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, stateFile), append(b, '\n'), 0o600)
}

// LoadState reads the state file.
func LoadState(dir string) (State, error) {
	path := filepath.Join(dir, stateFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, fmt.Errorf("no credential in %s: register first (tether agent register --server URL --token - --state-dir %s, with the one-time token on standard input)", dir, dir)
	}
	if err != nil {
		return State{}, err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return State{}, fmt.Errorf("%s is not a tether agent state file: %w", path, err)
	}
	if st.Server == "" || st.Credential.Token == "" || st.Credential.ClusterID == "" {
		return State{}, fmt.Errorf("%s lacks the server or the credential: register again", path)
	}
	return st, nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Ledger remembers the idempotency keys of jobs this agent completed, so that
// a re-delivered job is reported as a no-op instead of run again. It keeps the
// newest Max keys, in memory and in an append-only file compacted when it
// grows to twice that.
type Ledger struct {
	path string
	max  int

	mu    sync.Mutex
	order []string
	keys  map[string]bool
	lines int
}

// OpenLedger loads the ledger in dir.
func OpenLedger(dir string, max int) (*Ledger, error) {
	if max <= 0 {
		max = 10000
	}
	l := &Ledger{path: filepath.Join(dir, ledgerFile), max: max, keys: map[string]bool{}}
	f, err := os.Open(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var key string
		if json.Unmarshal(sc.Bytes(), &key) == nil && key != "" {
			l.remember(key)
			l.lines++
		}
	}
	return l, sc.Err()
}

// Done reports whether key was completed.
func (l *Ledger) Done(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keys[key]
}

// Record remembers key and persists it before returning.
func (l *Ledger) Record(key string) error {
	if key == "" {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keys[key] {
		return nil
	}
	l.remember(key)
	if l.lines >= 2*l.max {
		return l.compact()
	}
	line, _ := json.Marshal(key)
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	l.lines++
	return err
}

func (l *Ledger) remember(key string) {
	if l.keys[key] {
		return
	}
	l.keys[key] = true
	l.order = append(l.order, key)
	if len(l.order) > l.max {
		delete(l.keys, l.order[0])
		l.order = l.order[1:]
	}
}

func (l *Ledger) compact() error {
	var b []byte
	for _, k := range l.order {
		line, _ := json.Marshal(k)
		b = append(append(b, line...), '\n')
	}
	l.lines = len(l.order)
	return writeFileAtomic(l.path, b, 0o600)
}
