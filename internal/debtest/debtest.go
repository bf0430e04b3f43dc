// Package debtest installs the Debian packages whose commands the tests
// drive (chromium, pdftotext, curl, jq) when a command is missing and the
// tests run as root, as CI does on a fresh machine. `go test ./...` runs
// test binaries in parallel, and parallel tests within one: apt-get and
// dpkg each refuse a second caller outright, so one file lock serialises
// every install here and each binary asks for a command once.
package debtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// installTimeout bounds apt-get update and install together: chromium is
// about 100 MB, and the npm installs beside it share the network.
const installTimeout = 10 * time.Minute

var (
	mu      sync.Mutex
	results = map[string]string{} // command → why it is missing; "" once present
)

// Command returns the path of command (a name looked up on PATH, or an
// absolute path), installing packages with apt-get first when it is
// missing. It never skips: a test whose tool is missing fails saying what
// to install.
func Command(t testing.TB, command string, packages ...string) string {
	t.Helper()
	mu.Lock()
	why, done := results[command]
	if !done {
		why = ensure(t, command, packages)
		results[command] = why
	}
	mu.Unlock()
	if why != "" {
		t.Fatal(why)
	}
	path, err := exec.LookPath(command)
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	return path
}

func ensure(t testing.TB, command string, packages []string) string {
	if _, err := exec.LookPath(command); err == nil {
		return ""
	}
	pkgs := strings.Join(packages, " ")
	if os.Geteuid() != 0 {
		return command + " is missing: install Debian's " + pkgs + " (apt-get install " + pkgs + "); the tests install it themselves only when run as root"
	}
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "invoiced-apt.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "apt-get's lock file: " + err.Error()
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "apt-get's lock file: " + err.Error()
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck
	// Another binary may have installed it while this one waited.
	if _, err := exec.LookPath(command); err == nil {
		return ""
	}
	t.Logf("%s is missing: installing Debian's %s with apt-get", command, pkgs)
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	// The lock timeout waits out an apt-get that is not ours (an unattended
	// upgrade, an operator's install) instead of failing at once.
	for _, args := range [][]string{{"update"}, append([]string{"install", "-y", "--no-install-recommends"}, packages...)} {
		cmd := exec.CommandContext(ctx, "apt-get", append([]string{"-o", "DPkg::Lock::Timeout=300"}, args...)...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "apt-get " + strings.Join(args, " ") + ": " + err.Error() + "\n" + string(out)
		}
	}
	if _, err := exec.LookPath(command); err != nil {
		return "apt-get installed " + pkgs + " but " + command + " is still missing"
	}
	return ""
}
