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
	"testing"
	"unicode"

	"github.com/invoiced/invoiced/internal/debtest"
)

// Text is pdf's text in the order it was drawn, as pdftotext -raw
// extracts it: a table row is one line, its cells separated by a space.
func Text(t testing.TB, pdf []byte) string {
	t.Helper()
	pdftotext := debtest.Command(t, "pdftotext", "poppler-utils")
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

// RequireText fails t unless text holds each of sentences, read across
// line breaks: a sentence the PDF wraps over lines is found as one (runs
// of white space, no-break spaces aside, compare as one space).
func RequireText(t testing.TB, text string, sentences ...string) {
	t.Helper()
	flat := collapse(text)
	for _, s := range sentences {
		if !strings.Contains(flat, collapse(s)) {
			t.Fatalf("no %q in:\n%s", s, text)
		}
	}
}

// collapse makes each run of white space other than a no-break space
// one space.
func collapse(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r != '\u00a0' && unicode.IsSpace(r) }), " ")
}
