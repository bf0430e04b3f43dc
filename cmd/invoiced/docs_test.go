package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// repoRoot is the repository's root as seen from this package's directory,
// where go test runs.
const repoRoot = "../.."

// mdLink is one relative link of a Markdown file: the file or directory
// it names (empty for an anchor within the same file) and its anchor.
type mdLink struct {
	line           int
	target, anchor string
}

var (
	// inlineLinkRE matches [text](target) and ![alt](target), with an
	// optional title; reference definitions are "[name]: target".
	inlineLinkRE = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLinkRE    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	codeSpanRE   = regexp.MustCompile("`+[^`]*`+")
	schemeRE     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// markdownLines calls fn with each line of a Markdown file outside fenced
// code blocks, numbered from 1.
func markdownLines(raw []byte, fn func(n int, line string)) {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	fence := ""
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		t := strings.TrimSpace(l)
		if fence != "" {
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		fn(n, l)
	}
}

// relativeLinks returns the links of a Markdown file that point into the
// repository (not those with a scheme, such as https: or mailto:), in the
// order they appear, leaving out code blocks and code spans.
func relativeLinks(raw []byte) []mdLink {
	var links []mdLink
	markdownLines(raw, func(n int, l string) {
		l = codeSpanRE.ReplaceAllString(l, "")
		var targets []string
		for _, m := range inlineLinkRE.FindAllStringSubmatch(l, -1) {
			targets = append(targets, m[1])
		}
		if m := refLinkRE.FindStringSubmatch(l); m != nil {
			targets = append(targets, m[1])
		}
		for _, t := range targets {
			if schemeRE.MatchString(t) {
				continue
			}
			target, anchor, _ := strings.Cut(t, "#")
			links = append(links, mdLink{line: n, target: target, anchor: anchor})
		}
	})
	return links
}

// headingAnchors returns the anchors GitHub gives a Markdown file's
// headings: the heading's text lowercased, without punctuation, spaces
// as hyphens, and -1, -2, … after a repeated one.
func headingAnchors(raw []byte) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	heading := regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	linkText := regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	markdownLines(raw, func(_ int, l string) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			return
		}
		text := linkText.ReplaceAllString(m[1], "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if k := seen[a]; k > 0 {
			anchors[fmt.Sprintf("%s-%d", a, k)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	})
	return anchors
}

// docFiles are the Markdown files a reader follows links through:
// README.md, BENCHMARKS.md and everything under docs/, relative to the
// repository's root.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "BENCHMARKS.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(repoRoot, p)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	require.NoError(t, err)
	return files
}

// TestDocsLinksResolve: every relative link in the README, BENCHMARKS.md
// and docs/ names a file or directory that exists, and every anchor a
// heading of the file it points into, so a reader following the docs
// never lands on nothing.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	files := docFiles(t)
	require.Contains(t, files, filepath.Join("docs", "walkthrough.md"))
	anchors := map[string]map[string]bool{}
	anchorsOf := func(rel string) map[string]bool {
		if a, ok := anchors[rel]; ok {
			return a
		}
		raw, err := os.ReadFile(filepath.Join(repoRoot, rel))
		require.NoError(t, err)
		anchors[rel] = headingAnchors(raw)
		return anchors[rel]
	}
	var broken []string
	links := 0
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(repoRoot, f))
		require.NoError(t, err)
		for _, l := range relativeLinks(raw) {
			links++
			where := fmt.Sprintf("%s:%d: (%s#%s)", f, l.line, l.target, l.anchor)
			target := f
			if l.target != "" {
				if strings.HasPrefix(l.target, "/") {
					broken = append(broken, where+" is absolute; link relative to the file")
					continue
				}
				target = filepath.Join(filepath.Dir(f), l.target)
				info, err := os.Stat(filepath.Join(repoRoot, target))
				if err != nil {
					broken = append(broken, where+" names nothing")
					continue
				}
				if l.anchor != "" && (info.IsDir() || !strings.HasSuffix(target, ".md")) {
					broken = append(broken, where+" has an anchor into something that is not Markdown")
					continue
				}
			}
			if l.anchor != "" && !anchorsOf(target)[l.anchor] {
				broken = append(broken, where+" names no heading of "+target)
			}
		}
	}
	require.Greater(t, links, 20, "the docs link to each other")
	require.Empty(t, broken, "links that do not resolve:\n%s", strings.Join(broken, "\n"))
}

// TestHeadingAnchorsAreGitHubs holds the anchor rule to what GitHub
// renders for headings like ours.
func TestHeadingAnchorsAreGitHubs(t *testing.T) {
	t.Parallel()
	a := headingAnchors([]byte("# A first invoice\n## Issuing approved invoices (`make bench-issue`)\n" +
		"```\n# not a heading\n```\n## Who must agree: the approval policy\n### Notes\n### Notes\n## [Linked](x.md) text\n"))
	require.Equal(t, map[string]bool{
		"a-first-invoice": true, "issuing-approved-invoices-make-bench-issue": true,
		"who-must-agree-the-approval-policy": true, "notes": true, "notes-1": true, "linked-text": true,
	}, a)
}

// adrRE matches a citation of a decision record by its number.
var adrRE = regexp.MustCompile(`ADR-(\d{4})`)

// TestCitedADRsExist: every ADR-NNNN that code, SQL, scripts or docs cite
// has its record in docs/adr/ (NNNN-title.md), so a reader can look a
// decision up where the code names it.
func TestCitedADRsExist(t *testing.T) {
	t.Parallel()
	records, err := filepath.Glob(filepath.Join(repoRoot, "docs", "adr", "[0-9][0-9][0-9][0-9]-*.md"))
	require.NoError(t, err)
	have := map[string]bool{}
	for _, r := range records {
		have[filepath.Base(r)[:4]] = true
	}
	require.NotEmpty(t, have)

	skipDirs := []string{".git", "node_modules", "bin", "_artifacts"}
	exts := []string{".go", ".md", ".yaml", ".yml", ".jsx", ".js", ".mjs", ".sql", ".html", ".tmpl", ".sh"}
	var missing []string
	cited := 0
	err = filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if slices.Contains(skipDirs, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !slices.Contains(exts, filepath.Ext(p)) && d.Name() != "Makefile" {
			return nil
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, l := range strings.Split(string(raw), "\n") {
			for _, m := range adrRE.FindAllStringSubmatch(l, -1) {
				cited++
				if !have[m[1]] {
					rel, _ := filepath.Rel(repoRoot, p)
					missing = append(missing, fmt.Sprintf("%s:%d cites ADR-%s", rel, i+1, m[1]))
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, cited, 100, "the code cites its decisions")
	require.Empty(t, missing, "ADRs cited without a record in docs/adr/ (write it, or stop citing it):\n%s", strings.Join(missing, "\n"))
}
