package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func findMake(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not installed")
	}
	return p
}

// `make image` tags the images deploy/README.md then runs.
func TestMakeImageTagsMatchREADME(t *testing.T) {
	mk := findMake(t)
	out, err := run(t, time.Minute, mk, "-C", root, "-n", "image")
	if err != nil {
		t.Fatalf("make -n image: %v\n%s", err, out)
	}
	var built []string
	for _, m := range regexp.MustCompile(`(?m)\s-t (\S+)`).FindAllStringSubmatch(out, -1) {
		built = append(built, m[1])
	}
	if !slices.Equal(built, []string{"tether:dev", "tether-agent:dev"}) {
		t.Errorf("make image tags %v, want tether:dev and tether-agent:dev", built)
	}
	if !strings.Contains(out, "--target agent") {
		t.Errorf("make image does not build the agent's target:\n%s", out)
	}
	readme := string(readUnit(t, "README.md"))
	runs := regexp.MustCompile(`(?m)^docker run .*?(\btether(?:-agent)?:\S+)`).FindAllStringSubmatch(readme, -1)
	if len(runs) == 0 {
		t.Fatal("deploy/README.md runs no image")
	}
	for _, m := range runs {
		if !slices.Contains(built, m[1]) {
			t.Errorf("deploy/README.md runs %s, which make image does not build (%v)", m[1], built)
		}
	}
}

// `make install` puts a working tether in $(PREFIX)/bin and says so when
// that is not on PATH.
func TestMakeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not building tether")
	}
	mk := findMake(t)
	dir := t.TempDir()
	prefix := filepath.Join(dir, "prefix")
	out, err := run(t, 5*time.Minute, mk, "-C", root, "install", "PREFIX="+prefix, "BIN="+filepath.Join(dir, "build", "tether"))
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	if !strings.Contains(out, prefix+"/bin is not on PATH") {
		t.Errorf("make install into a directory off PATH does not say so:\n%s", out)
	}
	bin := filepath.Join(prefix, "bin", "tether")
	if fi, err := os.Stat(bin); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s: %v, or not executable", bin, err)
	}
	if out, err := run(t, time.Minute, bin, "version"); err != nil || !strings.HasPrefix(out, "tether ") {
		t.Errorf("the installed tether version: %v\n%s", err, out)
	}
}
