package main

import (
	"bufio"
	"bytes"
	"context"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document/documenttest"
	"github.com/invoiced/invoiced/internal/debtest"
	"github.com/invoiced/invoiced/openapi/openapitest"
	"github.com/stretchr/testify/require"
)

// walkthroughMarker comes on the line before each block the walkthrough
// runs.
const walkthroughMarker = "<!-- walkthrough"

// walkthrough returns the ```sh blocks that follow a walkthrough marker,
// in reading order: the README's, then those of each Markdown file the
// README links to, in the order it first links them. So the walkthrough
// may go on in docs/ and the test follows it there.
func walkthrough(t *testing.T) (blocks []string, files []string) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	files = []string{"README.md"}
	for _, l := range relativeLinks(readme) {
		f := filepath.Clean(l.target)
		if strings.HasSuffix(f, ".md") && !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	var marked []string
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(repoRoot, f))
		require.NoError(t, err)
		bs := markedBlocks(t, f, raw)
		if len(bs) > 0 {
			marked = append(marked, f)
		}
		blocks = append(blocks, bs...)
	}
	return blocks, marked
}

// markedBlocks returns the ```sh blocks of one file that follow a
// walkthrough marker, in order.
func markedBlocks(t *testing.T, name string, raw []byte) []string {
	t.Helper()
	var blocks []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), walkthroughMarker) {
			continue
		}
		require.True(t, sc.Scan() && sc.Text() == "```sh", "%s: a walkthrough marker must come right before a ```sh block", name)
		var b strings.Builder
		for sc.Scan() && sc.Text() != "```" {
			b.WriteString(sc.Text() + "\n")
		}
		blocks = append(blocks, b.String())
	}
	require.NoError(t, sc.Err())
	return blocks
}

// tokenPlaceholder is what the README writes for the token make run
// printed; the walkthrough pastes the token there, as a newcomer does.
const tokenPlaceholder = "export TOKEN=inv_…"

// walkthroughPassword is what the walkthrough types when users passwd
// reads standard input.
const walkthroughPassword = "a walkthrough password"

// TestReadmeWalkthroughIssuesAnInvoice pastes the walkthrough (the
// README's quick start and docs/walkthrough.md) into bash as a newcomer
// would, on a fresh `make run`, from the directory
// whose bin/invoiced make built: the admin's first request from a second
// terminal, its setup and its first invoice, from customer to issued,
// then a partial payment, a credit note approved by another person, the
// balance and both PDFs, then user administration from the CLI and over
// HTTP, and the approval policy over HTTP. Its requests reach the server
// through a proxy that holds them and their answers to openapi.yaml, as
// every in-process test server is (INVOICED_ADDR, which the walkthrough
// reads, names the proxy).
func TestReadmeWalkthroughIssuesAnInvoice(t *testing.T) {
	t.Parallel()
	debtest.Command(t, "curl", "curl")
	debtest.Command(t, "jq", "jq")
	blocks, files := walkthrough(t)
	require.Equal(t, []string{"README.md", filepath.Join("docs", "walkthrough.md")}, files,
		"the README starts the walkthrough and docs/walkthrough.md, which it links, goes on")
	require.GreaterOrEqual(t, len(blocks), 7, "the walkthrough marks the second terminal, its setup, its first invoice, what follows issue, "+
		"user administration (CLI and HTTP) and the approval policy over HTTP")

	mr := makeRun(t)
	script := strings.Join(blocks, "")
	require.Equal(t, 1, strings.Count(script, tokenPlaceholder), "the walkthrough exports make run's token once, as %q", tokenPlaceholder)
	script = strings.Replace(script, tokenPlaceholder, "export TOKEN="+mr.token, 1)
	target, err := url.Parse("http://" + mr.addr)
	require.NoError(t, err)
	proxy := httptest.NewServer(openapitest.Wrap(t, httputil.NewSingleHostReverseProxy(target)))
	t.Cleanup(proxy.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail\n"+script)
	cmd.Dir = mr.dir
	cmd.Stdin = strings.NewReader(walkthroughPassword + "\n") // users passwd reads a line
	cmd.Env = append(os.Environ(), "DATABASE_URL="+mr.dbURL, "INVOICED_ADDR="+strings.TrimPrefix(proxy.URL, "http://"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	require.NoError(t, err, "the walkthrough failed:\nstdout:\n%s\nstderr:\n%s", &stdout, &stderr)
	_, err = os.Stat(filepath.Join(mr.dir, "bin", "invoiced"))
	require.NoError(t, err, "make run built bin/invoiced where the walkthrough ran")

	out := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Equal(t, `{"username":"admin","role":"admin"}`, out[0], "the second terminal's request, with make run's token")
	require.Contains(t, stdout.String(), "created user alice with role clerk")
	// What the walkthrough's comments say the commands print, from the issue on.
	issued := slices.IndexFunc(out, func(l string) bool { return strings.HasPrefix(l, `{"number":"INV-`) })
	require.Positive(t, issued, stdout.String())
	require.Equal(t, "approved", out[issued-1])
	require.GreaterOrEqual(t, len(out[issued:]), 6, stdout.String())
	require.Regexp(t, `^\{"number":"INV-\d{4}-000001","status":"issued","total":42840\}$`, out[issued])
	require.Equal(t, `{"status":"issued","amount_paid":20000,"balance_due":22840}`, out[issued+1])
	require.Equal(t, "approved", out[issued+2])
	require.Regexp(t, `^\{"number":"CN-\d{4}-000001","total":14280,"balance_due":8560\}$`, out[issued+3])
	cn, inv := out[issued+4], out[issued+5]
	require.Regexp(t, `^CN-\d{4}-000001\.pdf$`, cn)
	require.Regexp(t, `^INV-\d{4}-000001\.pdf$`, inv)

	// User administration and the policy print, in this order, what the
	// walkthrough's comments say (other lines, such as tables, in between).
	rest := out[issued+6:]
	for _, want := range []string{
		`^created user dora with role clerk; their API token \(shown once\):$`,
		`^user bob: role approver → clerk$`,
		`^user bob: disabled$`,
		`^user bob: enabled$`,
		`^user bob: email bob@example\.com$`,
		`^password set for dora; their open web sessions have ended$`,
		`^new API token for dora \(shown once\):$`,
		`^token [0-9a-f-]{36} \(""\) revoked at `,
		`^\{"username":"bob","role":"approver"\}$`,
		`^\{"revoked":true\}$`,
		`^\{"code":"VERSION_MISMATCH"\}$`,
		`^\{"version":3,"jpy":0\}$`,
	} {
		i := slices.IndexFunc(rest, regexp.MustCompile(want).MatchString)
		require.GreaterOrEqual(t, i, 0, "no line matching %s after the ones before it:\n%s", want, strings.Join(rest, "\n"))
		rest = rest[i+1:]
	}
	require.Empty(t, rest, "the walkthrough ends with the policy's last answer")

	// The PDFs it saved read back as the walkthrough says.
	pdf, err := os.ReadFile(filepath.Join(mr.dir, cn))
	require.NoError(t, err)
	text := documenttest.Text(t, pdf)
	documenttest.RequireLines(t, text, "Example Seller", "Example Street 1", "10115 Berlin", "Credit note",
		"Number "+strings.TrimSuffix(cn, ".pdf"), "Corrects invoice "+strings.TrimSuffix(inv, ".pdf"),
		"Consulting 1 unit 120.00 19 % 120.00", "Total 142.80 EUR")
	require.Contains(t, text, "\nBill to\nAcme GmbH\nMarktplatz 1\n80331 München\nGermany\n", "the customer the walkthrough created, with its address")
	require.Contains(t, text, "\nReason\nOne hour not worked\n")
	pdf, err = os.ReadFile(filepath.Join(mr.dir, inv))
	require.NoError(t, err)
	documenttest.RequireLines(t, documenttest.Text(t, pdf), "Credit notes "+strings.TrimSuffix(cn, ".pdf"),
		"Total 428.40 EUR", "Credited 142.80 EUR", "Paid 200.00 EUR", "Balance due 85.60 EUR")
}
