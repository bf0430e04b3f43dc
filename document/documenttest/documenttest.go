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

// HasLine reports whether text has line as one whole line; the form feed
// pdftotext puts before each page after the first ends a line too.
func HasLine(text, line string) bool {
	return slices.Contains(strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '\f' }), line)
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

// QRCodes are the payloads of the QR codes a person's phone finds on
// pdf's pages: each page rasterised at 150 dpi by pdftoppm (poppler-utils)
// and read by zbarimg (zbar-tools), a decoder of its own; none is an
// empty list.
func QRCodes(t testing.TB, pdf []byte) []string {
	t.Helper()
	pdftoppm := debtest.Command(t, "pdftoppm", "poppler-utils")
	zbarimg := debtest.Command(t, "zbarimg", "zbar-tools")
	dir := t.TempDir()
	in := filepath.Join(dir, "document.pdf")
	if err := os.WriteFile(in, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(pdftoppm, "-r", "150", "-png", in, filepath.Join(dir, "page")).CombinedOutput(); err != nil {
		t.Fatalf("pdftoppm: %v: %s", err, out)
	}
	pages, err := filepath.Glob(filepath.Join(dir, "page*.png"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("pdftoppm wrote no page (%v)", err)
	}
	slices.Sort(pages)
	var codes []string
	for _, p := range pages {
		// --raw prints each symbol's data alone; -Sbinary keeps its bytes
		// (UTF-8) as they are instead of guessing a character set. A
		// symbol's data may hold line breaks, so each is read on its own
		// with -1 (one symbol) and the exit status tells none (4) from an
		// error.
		cmd := exec.Command(zbarimg, "--quiet", "--raw", "-Sbinary", "-Sqrcode.enable", p)
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 4 {
			continue
		}
		if err != nil {
			t.Fatalf("zbarimg %s: %v", filepath.Base(p), err)
		}
		codes = append(codes, strings.TrimSuffix(string(out), "\n"))
	}
	return codes
}
