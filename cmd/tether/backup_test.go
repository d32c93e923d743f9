package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBackupAndRestore(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "prod", "--namespaces", "apps")
	submit(t, db, "prod", "apply", configMap("apps", "one"))
	dir := t.TempDir()
	backup := filepath.Join(dir, "tether-backup.db")

	// A consistent copy while serve runs.
	srv, _, _ := startServe(t, db)
	out := ok(t, db, "backup", "--to", backup).stdout
	for _, want := range []string{"1 cluster,", "1 job,", "integrity check ok", "key file (" + db + ".key)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("backup output lacks %q:\n%s", want, out)
		}
	}
	if st, err := os.Stat(backup); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v, mode %v; want 0600", err, st.Mode().Perm())
	}
	wantError(t, cli(t, db, "backup", "--to", backup), exitError, "already exists")
	wantError(t, cli(t, db, "restore", "--from", backup), exitError, "in use by another process")
	srv.stop(t)

	// Later changes, then the restore brings the backup's state back and
	// keeps what it replaced.
	createCluster(t, db, "later", "--namespaces", "apps")
	out = ok(t, db, "restore", "--from", backup).stdout
	if !strings.Contains(out, "Restored") || !strings.Contains(out, "before-restore") {
		t.Fatalf("restore output:\n%s", out)
	}
	if list := ok(t, db, "cluster", "list").stdout; strings.Contains(list, "later") || !strings.Contains(list, "prod") {
		t.Fatalf("after the restore:\n%s", list)
	}
	kept, _ := filepath.Glob(db + ".before-restore-*")
	if len(kept) == 0 {
		t.Fatal("the replaced database was not kept")
	}

	// Refusals: not a database, a database from a newer tether, PostgreSQL.
	junk := filepath.Join(dir, "junk.db")
	os.WriteFile(junk, []byte("not a database at all, just some bytes that go on for a while"), 0o600)
	wantError(t, cli(t, db, "restore", "--from", junk), exitError, "junk.db")
	newer := filepath.Join(dir, "newer.db")
	ok(t, db, "backup", "--to", newer)
	raw := openRawSQLite(t, newer)
	if _, err := raw.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, '0099_future.sql', 0)"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	wantError(t, cli(t, db, "restore", "--from", newer), exitError, "schema version 99", "knows only up to")
	wantError(t, cli(t, "postgres://tether@db.example/tether", "backup", "--to", filepath.Join(dir, "pg.db")), exitError, "pg_dump", "the file given with --key-file")
	wantError(t, cli(t, filepath.Join(dir, "missing.db"), "backup", "--to", filepath.Join(dir, "x.db")), exitError, "no database at")
}

// TestBackupAndRestoreSayWhatFailed: a backup destination that cannot be
// created, or a restore that cannot write its copy, says which file and why
// (not "the database file cannot be opened; try again" or "internal error"),
// and a failed restore leaves the database in place; -o json uses the same
// field names as every other document.
func TestBackupAndRestoreSayWhatFailed(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "prod")
	dir := t.TempDir()

	wantError(t, cli(t, db, "backup", "--to", filepath.Join(dir, "no-such-dir", "b.db")), exitError,
		"cannot create the backup file "+filepath.Join(dir, "no-such-dir", "b.db"), "no such file or directory")
	backup := filepath.Join(dir, "b.db")
	info := okJSON[map[string]any](t, db, "backup", "--to", backup)
	for _, k := range []string{"path", "bytes", "schemaVersion", "clusters", "jobs", "auditEntries"} {
		if _, ok := info[k]; !ok {
			t.Errorf("backup -o json lacks %q: %v", k, info)
		}
	}

	// The restored copy cannot be written beside the database (here its
	// temporary name is taken by a directory): the database stays.
	if err := os.Mkdir(db+".restoring", 0o700); err != nil {
		t.Fatal(err)
	}
	wantError(t, cli(t, db, "restore", "--from", backup), exitError, "cannot write the restored database beside "+db, "the database was not changed")
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("a failed restore moved the database away: %v", err)
	}
	ok(t, db, "cluster", "get", "prod")
	os.Remove(db + ".restoring")
	res := ok(t, db, "restore", "--from", backup, "-o", "json")
	restored := decode[struct {
		Restored map[string]any `json:"restored"`
		Previous string         `json:"previous"`
	}](t, res)
	if restored.Restored["schemaVersion"] == nil || !strings.Contains(restored.Previous, "before-restore") {
		t.Fatalf("restore -o json: %s", res.stdout)
	}
}

// TestDatabaseFilesAreNotCreatedByMistake: a read-only command at a
// mistyped path says no database is there and creates none; a database
// tether creates is readable by its owner only.
func TestDatabaseFilesAreNotCreatedByMistake(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	typo := filepath.Join(dir, "tehter.db")
	for _, args := range [][]string{{"cluster", "list"}, {"job", "list"}, {"audit"}, {"rollout", "list"}} {
		wantError(t, cli(t, typo, args...), exitError, "no database at", "tehter.db")
	}
	if _, err := os.Stat(typo); err == nil {
		t.Fatal("a read-only command created a database at a mistyped path")
	}
	db := filepath.Join(dir, "tether.db")
	createCluster(t, db, "prod")
	if st, err := os.Stat(db); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("new database mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
}

// TestUnusableDatabaseSaysWhy: a --db that is a directory, a file that is not
// a SQLite database, or a database the user may not write is named with what
// is wrong and what to do, not "internal error: cannot open database".
func TestUnusableDatabaseSaysWhy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wantError(t, cli(t, dir, "cluster", "list"), exitError, dir+" is a directory", filepath.Join(dir, "tether.db"))
	// An empty --db (an unset shell variable) would be SQLite's temporary
	// database, gone at exit.
	for _, args := range [][]string{{"cluster", "list"}, {"cluster", "create", "--name", "prod"}, {"backup", "--to", filepath.Join(dir, "b.db")}} {
		wantError(t, cli(t, "", args...), exitUsage, "--db is empty")
	}
	notDB := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notDB, []byte("these are not the rows you are looking for\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"cluster", "list"}, {"cluster", "create", "--name", "prod"}, {"backup", "--to", filepath.Join(dir, "b.db")}} {
		wantError(t, cli(t, notDB, args...), exitError, notDB+" is not a SQLite database")
	}

	if os.Geteuid() == 0 {
		t.Log("running as root, which every permission lets through: the permission-denied case is not checked")
		return
	}
	db := newDB(t)
	createCluster(t, db, "prod")
	if err := os.Chmod(db, 0o400); err != nil {
		t.Fatal(err)
	}
	wantError(t, cli(t, db, "cluster", "list"), exitError, "cannot open the database "+db+" for reading and writing (permission denied)")
	ro := t.TempDir()
	if err := os.Chmod(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o700) })
	wantError(t, cli(t, filepath.Join(ro, "tether.db"), "cluster", "create", "--name", "prod"), exitError, "cannot create files in "+ro+" (permission denied)")
}

// TestKeyFileIsNeverReplacedSilently: a registry holding secrets sealed with
// a key file that went missing refuses to serve (instead of making a new key
// that cannot open them); keys init creates a key file and never replaces
// one; serve on PostgreSQL needs one.
func TestKeyFileIsNeverReplacedSilently(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "prod")
	reg := openRegistry(t, db)
	registerAgent(t, reg, c.RegistrationToken, "hmac") // seals an HMAC key with db.key
	if err := os.Remove(db + ".key"); err != nil {
		t.Fatal(err)
	}
	res := cli(t, db, "serve", "--listen", "127.0.0.1:0")
	if res.code == exitOK || !strings.Contains(res.stderr, "key file") || !strings.Contains(res.stderr, "restore it from your backup") {
		t.Fatalf("serve with its key file missing: %s", res)
	}
	if _, err := os.Stat(db + ".key"); err == nil {
		t.Fatal("a new key file was made next to secrets sealed with another")
	}

	fresh := newDB(t)
	out := ok(t, fresh, "keys", "init").stdout
	if !strings.Contains(out, fresh+".key") {
		t.Fatalf("keys init: %s", out)
	}
	if st, err := os.Stat(fresh + ".key"); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	wantError(t, cli(t, fresh, "keys", "init"), exitError, "already exists", "never replaces")

	// A key file others may read, or one that is not a key file, is
	// refused saying so, not as a bare "internal error".
	createCluster(t, fresh, "prod")
	if err := os.Chmod(fresh+".key", 0o644); err != nil {
		t.Fatal(err)
	}
	// It is the operator's setup to fix, as a wrong flag is: exit 2.
	for _, args := range [][]string{{"keys", "list"}, {"serve", "--listen", "127.0.0.1:0"}} {
		res := cli(t, fresh, args...)
		want := "tether: key file " + fresh + ".key is readable by other users (mode 0644); run: chmod 600 " + fresh + ".key.\n"
		if res.code != exitUsage || res.stderr != want || res.stdout != "" {
			t.Errorf("%v with a key file of mode 0644: exit %d, stderr %q; want exit %d and %q", args, res.code, res.stderr, exitUsage, want)
		}
	}
	if err := os.WriteFile(fresh+".key", []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(fresh+".key", 0o600); err != nil {
		t.Fatal(err)
	}
	if res := cli(t, fresh, "serve", "--listen", "127.0.0.1:0"); res.code != exitUsage || !strings.Contains(res.stderr, "is not a tether key file") || strings.Contains(res.stderr, "internal error") {
		t.Errorf("serve with a key file that is not one: exit %d, stderr %q; want exit %d saying what is wrong with it", res.code, res.stderr, exitUsage)
	}
	dir := t.TempDir()
	wantError(t, cli(t, fresh, "--key-file", dir, "keys", "list"), exitError, "key file "+dir+" is a directory")
	wantError(t, cli(t, "postgres://tether@db.example/tether", "serve"), exitUsage, "--key-file", "keys init")
}

// TestRestoreKeepsTheOwner: restore, run as root next to a database another
// user owns (the systemd unit's dynamic user), leaves the restored file to
// that user, who could not open a root-owned file of mode 0600.
func TestRestoreKeepsTheOwner(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root can give a file to another user")
	}
	db := newDB(t)
	createCluster(t, db, "prod")
	backup := filepath.Join(t.TempDir(), "b.db")
	ok(t, db, "backup", "--to", backup)
	const uid, gid = 65534, 65534
	if err := os.Chown(db, uid, gid); err != nil {
		t.Fatal(err)
	}
	ok(t, db, "restore", "--from", backup)
	if o := fileOwner(db); o == nil || o.uid != uid || o.gid != gid {
		t.Fatalf("the restored database is owned by %+v, want %d:%d, the owner of the one it replaced", o, uid, gid)
	}
}

// TestServeRefusesAnotherKeyFile: a key file that opens none of the secrets
// the database holds (another database's, or one made by keys init beside a
// copied database) stops serve, as a missing one does, instead of sealing
// new secrets that the right file cannot open.
func TestServeRefusesAnotherKeyFile(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "prod")
	reg := openRegistry(t, db)
	registerAgent(t, reg, c.RegistrationToken, "hmac") // seals an HMAC key with db.key
	other := filepath.Join(t.TempDir(), "other.key")
	ok(t, db, "keys", "init", "--key-file", other)
	wantError(t, cli(t, db, "--key-file", other, "serve", "--listen", "127.0.0.1:0"), exitError,
		"key file "+other+" opens none of the secrets the database holds", "credential_hmac_key", "is it this database's key file?")
}
