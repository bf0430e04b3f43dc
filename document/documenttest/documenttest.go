// Package documenttest reads rendered documents back as text, with
// pdftotext from Debian's poppler-utils, as a person's PDF reader would
// show them.
package documenttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const pdftotext = "pdftotext"

var install struct {
	once sync.Once
	err  string
}

// ensurePdftotext installs poppler-utils with apt-get when pdftotext is
// missing and the tests run as root (as CI does); otherwise it fails the
// test saying what to install. It never skips: a document nobody read
// back is not tested.
func ensurePdftotext(t testing.TB) {
	t.Helper()
	install.once.Do(func() {
		if _, err := exec.LookPath(pdftotext); err == nil {
			return
		}
		if os.Geteuid() != 0 {
			install.err = "pdftotext is missing: install Debian's poppler-utils (apt-get install poppler-utils); the tests install it themselves only when run as root"
			return
		}
		// Several test binaries may install at once: wait for dpkg's lock.
		for _, args := range [][]string{{"update"}, {"install", "-y", "--no-install-recommends", "poppler-utils"}} {
			cmd := exec.Command("apt-get", append([]string{"-o", "DPkg::Lock::Timeout=300"}, args...)...)
			cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
			if out, err := cmd.CombinedOutput(); err != nil {
				install.err = "apt-get " + strings.Join(args, " ") + ": " + err.Error() + "\n" + string(out)
				return
			}
		}
		if _, err := exec.LookPath(pdftotext); err != nil {
			install.err = "apt-get installed poppler-utils but pdftotext is still missing"
		}
	})
	if install.err != "" {
		t.Fatal(install.err)
	}
}

// Text is pdf's text in the order it was drawn, as pdftotext -raw
// extracts it: a table row is one line, its cells separated by a space.
func Text(t testing.TB, pdf []byte) string {
	t.Helper()
	ensurePdftotext(t)
	in := filepath.Join(t.TempDir(), "document.pdf")
	if err := os.WriteFile(in, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(pdftotext, "-raw", "-enc", "UTF-8", in, "-").Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg += ": " + string(ee.Stderr)
		}
		t.Fatalf("pdftotext: %s", msg)
	}
	return string(out)
}

// HasLine reports whether text has line as one whole line.
func HasLine(text, line string) bool {
	return slices.Contains(strings.Split(text, "\n"), line)
}

// RequireLines fails t unless text has each of lines as a whole line.
func RequireLines(t testing.TB, text string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !HasLine(text, l) {
			t.Fatalf("no line %q in:\n%s", l, text)
		}
	}
}
