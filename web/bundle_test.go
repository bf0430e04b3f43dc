package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/nodetest"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/vat"
	"github.com/stretchr/testify/require"
)

// TestChatBundleIsBuiltFromItsSources rebuilds static/chat.js the way
// `make chat-bundle` does, from a copy of web/chat: npm ci from its
// lockfile, then build.mjs with its fixed flags. The committed bundle
// must be exactly what the sources and the pinned packages make, so what
// `make run` serves without Node is what a reviewer can read.
func TestChatBundleIsBuiltFromItsSources(t *testing.T) {
	t.Parallel()
	npm, err := exec.LookPath("npm")
	require.NoError(t, err, "rebuilding the chat bundle needs Node.js and npm on PATH")
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "src"), os.DirFS("chat/src")))
	for _, f := range []string{"package.json", "package-lock.json", "build.mjs"} {
		b, err := os.ReadFile(filepath.Join("chat", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// --ignore-scripts: esbuild's JavaScript API finds its platform
	// package's binary without its install script.
	run := func(name string, args ...string) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %v:\n%s", name, args, out)
	}
	run(npm, append(nodetest.CIFlags, "--ignore-scripts")...)
	out := filepath.Join(dir, "chat.js")
	run("node", "build.mjs", out)

	built, err := os.ReadFile(out)
	require.NoError(t, err)
	committed, err := os.ReadFile("static/chat.js")
	require.NoError(t, err)
	require.True(t, bytes.Equal(built, committed),
		"static/chat.js is not what web/chat builds (%d bytes built, %d committed): run `make chat-bundle` and commit the result", len(built), len(committed))
}

// The chat page shows amounts as the pages do: its money.js, given the
// server's table (as the page hands it over), writes what money.Display
// writes, for every exponent and sign, up to the largest amount a
// JavaScript number holds exactly (2^53 − 1: JSON.parse reads the API's
// integers into numbers).
func TestChatAmountsReadAsThePages(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	require.NoError(t, err)
	type sample struct {
		Amount   int64  `json:"amount"`
		Currency string `json:"currency"`
	}
	var samples []sample
	for _, cur := range []string{"USD", "JPY", "BHD", "CLF", "XXX"} {
		for _, a := range []int64{0, 5, -5, 1999, 100000, 1623750, -1623750, 1<<53 - 1, -(1<<53 - 1)} {
			samples = append(samples, sample{a, cur})
		}
	}
	// The table as the page embeds it (web.Chat marshals money.Exponents).
	in, err := json.Marshal(map[string]any{"exponents": money.Exponents(), "samples": samples})
	require.NoError(t, err)
	src, err := filepath.Abs("chat/src/money.js")
	require.NoError(t, err)
	cmd := exec.Command(node, "--input-type=module", "-e", `
		import { setExponents, display } from `+strconv.Quote("file://"+src)+`;
		const chunks = []; for await (const c of process.stdin) chunks.push(c);
		const { exponents, samples } = JSON.parse(Buffer.concat(chunks));
		setExponents(exponents);
		console.log(JSON.stringify(samples.map((s) => display(s.amount, s.currency))));`)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var got []string
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	require.Len(t, got, len(samples))
	for i, s := range samples {
		require.Equal(t, money.Display(s.Amount, s.Currency), got[i], "%d %s", s.Amount, s.Currency)
	}
}

// The chat page's drafted lines show quantities as the pages and the PDF
// do (document.Quantity).
func TestChatQuantitiesReadAsThePages(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	require.NoError(t, err)
	samples := []string{"1", "7", "7.5", "7.50", "0.125", "999", "1000", "1234.5678", "1234567", "99999999999999.9999"}
	in, err := json.Marshal(samples)
	require.NoError(t, err)
	src, err := filepath.Abs("chat/src/money.js")
	require.NoError(t, err)
	cmd := exec.Command(node, "--input-type=module", "-e", `
		import { quantity } from `+strconv.Quote("file://"+src)+`;
		const chunks = []; for await (const c of process.stdin) chunks.push(c);
		console.log(JSON.stringify(JSON.parse(Buffer.concat(chunks)).map(quantity)));`)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var got []string
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	require.Len(t, got, len(samples))
	for i, s := range samples {
		q, err := quantity.Parse([]byte(strconv.Quote(s)))
		require.NoError(t, err)
		require.Equal(t, document.Quantity(q), got[i], "%s", s)
	}
}

// A confirmation shows what approving would make: its lines' amounts,
// tax and total, priced by money.js's priced as invoices.ComputeLines
// prices them (VAT per category and rate, shared over the lines), up to
// the largest total a JavaScript number holds exactly.
func TestChatTotalsReadAsTheServer(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	require.NoError(t, err)
	drafts := [][]invoices.LineInput{
		{{Description: "a", Quantity: 2 * quantity.One, UnitAmount: 45000, TaxRateBPS: 825}, {Description: "b", Quantity: 1 * quantity.One, UnitAmount: 12000, TaxRateBPS: 825}, {Description: "c", Quantity: 1 * quantity.One, UnitAmount: 8550}},
		// Half a cent each way: 1.785 rounds to 1.78, 1.795 to 1.80, 0.5 to 0.
		{{Description: "even", Quantity: 1 * quantity.One, UnitAmount: 2550, TaxRateBPS: 700}, {Description: "odd", Quantity: 1 * quantity.One, UnitAmount: 2450, TaxRateBPS: 750}, {Description: "half", Quantity: 1 * quantity.One, UnitAmount: 5, TaxRateBPS: 1000}},
		{{Description: "big", Quantity: 1_000_000 * quantity.One, UnitAmount: 7_505_199_254, TaxRateBPS: 2000}},
		{{Description: "none", Quantity: 1 * quantity.One, UnitAmount: 0, TaxRateBPS: 0}},
		// VAT per category and rate (ADR-0021): ten lines of 0.03 at 19 %
		// make 0.06, where each line rounded alone would make 0.10.
		repeatLine(10, invoices.LineInput{Description: "tenth", Quantity: quantity.One, UnitAmount: 3, TaxRateBPS: 1900}),
		// Decimal quantities, a reverse-charge line, two rates.
		{{Description: "hours", Quantity: 75_000, Unit: "HUR", UnitAmount: 8_333, TaxRateBPS: 1900},
			{Description: "saffron", Quantity: 1_250, Unit: "KGM", UnitAmount: 99_999, TaxRateBPS: 700},
			{Description: "service abroad", Quantity: 3 * quantity.One, UnitAmount: 12_345, VATCategory: vat.ReverseCharge},
			{Description: "more hours", Quantity: 5_000, Unit: "HUR", UnitAmount: 8_333, TaxRateBPS: 1900}},
	}
	type priced struct {
		Lines                [][2]string `json:"lines"`
		Subtotal, Tax, Total string
	}
	var want []priced
	for _, d := range drafts {
		lines, sub, tax, total, err := invoices.ComputeLines(d)
		require.NoError(t, err)
		p := priced{Subtotal: strconv.FormatInt(sub, 10), Tax: strconv.FormatInt(tax, 10), Total: strconv.FormatInt(total, 10)}
		for _, l := range lines {
			p.Lines = append(p.Lines, [2]string{strconv.FormatInt(l.Amount, 10), strconv.FormatInt(l.TaxAmount, 10)})
		}
		want = append(want, p)
	}
	in, err := json.Marshal(drafts)
	require.NoError(t, err)
	src, err := filepath.Abs("chat/src/money.js")
	require.NoError(t, err)
	cmd := exec.Command(node, "--input-type=module", "-e", `
		import { priced } from `+strconv.Quote("file://"+src)+`;
		const chunks = []; for await (const c of process.stdin) chunks.push(c);
		console.log(JSON.stringify(JSON.parse(Buffer.concat(chunks)).map((lines) => {
			const p = priced(lines);
			return { lines: p.lines.map((l) => [String(l.amount), String(l.tax)]), Subtotal: String(p.subtotal), Tax: String(p.tax), Total: String(p.total) };
		})));`)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var got []priced
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	require.Equal(t, want, got)
}

// A line still being written, or one the server would refuse, is not
// priced: the confirmation shows no total it cannot stand behind.
func TestChatTotalsWaitForCompleteLines(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	require.NoError(t, err)
	src, err := filepath.Abs("chat/src/money.js")
	require.NoError(t, err)
	out, err := exec.Command(node, "--input-type=module", "-e", `
		import { priced } from `+strconv.Quote("file://"+src)+`;
		console.log(JSON.stringify([
			[], [{ description: "x", quantity: 2 }], [null], [{ quantity: 1.5, unit_amount: 100, tax_rate_bps: 0 }],
			[{ quantity: -1, unit_amount: 100, tax_rate_bps: 0 }], [{ quantity: 1, unit_amount: "100", tax_rate_bps: 0 }],
			[{ quantity: "1.23456", unit_amount: 100 }], [{ quantity: "0", unit_amount: 100 }], [{ quantity: "7.", unit_amount: 100 }],
		].map(priced)));`).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.JSONEq(t, `[null, null, null, null, null, null, null, null, null]`, string(out))
}

func repeatLine(n int, l invoices.LineInput) []invoices.LineInput {
	out := make([]invoices.LineInput, n)
	for i := range out {
		out[i] = l
	}
	return out
}
