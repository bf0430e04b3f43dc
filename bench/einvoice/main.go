// Command einvoice is the second half of `make bench-einvoice`: UBL, CII
// and Factur-X e-invoices per second on this machine's cores from an issued
// invoice's frozen rows in PostgreSQL, each document read as GET
// /v1/invoices/{id}/einvoice reads it (invoices.InvoiceEInvoice, one
// snapshot) and written, beside the reference measured in the same run:
// the same read and the invoice's PDF, which every invoice renders. The
// first half, einvoice's BenchmarkEInvoice, measures the writing alone.
// It prints each figure, the process's CPU per document (the database's
// is not in it) and the ratio to the PDF's documents/s (BENCHMARKS.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/internal/benchkit"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/seller"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
	def := os.Getenv("INVOICED_TEST_DATABASE_URL")
	if def == "" {
		def = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	admin := flag.String("admin-url", def, "a URL whose user may CREATE DATABASE")
	name := flag.String("db", "invoiced_bench_einvoice", "the benchmark database (created, dropped once measured)")
	dur := flag.Duration("duration", 3*time.Second, "how long each figure is measured")
	flag.Parse()
	if err := run(*admin, *name, *dur); err != nil {
		fmt.Fprintln(os.Stderr, "bench-einvoice:", err)
		os.Exit(1)
	}
}

func run(admin, name string, dur time.Duration) error {
	ctx := context.Background()
	benchkit.DropDB(ctx, admin, name)
	dbURL, err := benchkit.CreateDB(ctx, admin, name)
	if err != nil {
		return err
	}
	defer benchkit.DropDB(ctx, admin, name)
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	id, err := issue(ctx, pool)
	if err != nil {
		return err
	}
	e, _, err := invoices.InvoiceEInvoice(ctx, pool, id)
	if err != nil {
		return err
	}
	cores := runtime.GOMAXPROCS(0)
	fmt.Printf("bench-einvoice: read from the frozen rows and written: one issued invoice of %d lines (%s), %d goroutines, %s each\n",
		len(e.Lines), e.Number, cores, dur)

	read := func(write func(einvoice.Invoice) error) func() error {
		return func() error {
			e, _, err := invoices.InvoiceEInvoice(ctx, pool, id)
			if err == nil {
				err = write(e)
			}
			return err
		}
	}
	pdf, err := measure(dur, cores, read(func(e einvoice.Invoice) error { _, err := document.Render(e.Document); return err }))
	if err != nil {
		return err
	}
	fmt.Printf("%-10s %8.1f docs/s  %7.3f cpu-ms/doc  (the reference)\n", "pdf", pdf.perSec, pdf.cpuMS)
	cases := []struct {
		name string
		f    func(einvoice.Invoice) error
	}{
		{"read only", func(einvoice.Invoice) error { return nil }},
		{"ubl", func(e einvoice.Invoice) error { _, err := einvoice.Generate(e, einvoice.UBL); return err }},
		{"cii", func(e einvoice.Invoice) error { _, err := einvoice.Generate(e, einvoice.CII); return err }},
		{"facturx", func(e einvoice.Invoice) error { _, err := einvoice.Generate(e, einvoice.FacturX); return err }},
	}
	for _, c := range cases {
		r, err := measure(dur, cores, read(c.f))
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		fmt.Printf("%-10s %8.1f docs/s  %7.3f cpu-ms/doc  %6.2f× the pdf's docs/s\n", c.name, r.perSec, r.cpuMS, r.perSec/pdf.perSec)
	}
	return nil
}

// result is one figure: documents per second, and the process's CPU per
// document (garbage collection included; other load on a shared machine
// does not inflate it as it does wall time).
type result struct{ perSec, cpuMS float64 }

// measure runs f on n goroutines for dur.
func measure(dur time.Duration, n int, f func() error) (result, error) {
	var (
		done  atomic.Int64
		wg    sync.WaitGroup
		first error
		once  sync.Once
	)
	runtime.GC()
	cpu := benchkit.CPUTime(os.Getpid())
	start := time.Now()
	deadline := start.Add(dur)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if err := f(); err != nil {
					once.Do(func() { first = err })
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	used := benchkit.CPUTime(os.Getpid()) - cpu
	k := float64(done.Load())
	if first != nil || k == 0 {
		return result{}, fmt.Errorf("no document measured: %v", first)
	}
	return result{perSec: k / elapsed.Seconds(), cpuMS: float64(used.Microseconds()) / 1000 / k}, nil
}

// issue sets a seller and an XRechnung customer and issues them an
// invoice of six lines over three rates and two categories, past the gate
// (as the tests' invoicetest.Issued): the frozen rows the e-invoices are
// written from.
func issue(ctx context.Context, pool *pgxpool.Pool) (uuid.UUID, error) {
	if _, _, err := seller.NewService(pool, nil).Seed(ctx, seller.Details{
		LegalName: "Nordlicht Consulting GmbH", TradingName: "Nordlicht",
		Address: party.Address{Lines: []string{"Hauptstraße 5"}, Postcode: "10115", City: "Berlin", Country: "DE"},
		VATID:   "DE136695976", Registration: "Amtsgericht Charlottenburg, HRB 12345 B",
		Contact:      party.Contact{Name: "Ada Buchhaltung", Phone: "+49 30 1234567", Email: "billing@nordlicht.example"},
		BankAccounts: []party.BankAccount{{IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"}},
	}, []string{"bench"}); err != nil {
		return uuid.Nil, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	c, err := invoices.CustomerCreate(ctx, pool, &invoices.Customer{ID: uuid.Must(uuid.NewV7()), Name: "Landeshauptstadt München", Email: "ap@muenchen.example",
		Currency: "EUR", Address: party.Address{Lines: []string{"Marienplatz 8"}, Postcode: "80331", City: "München", Country: "DE"},
		BuyerReference: "04011000-12345-67", Language: "de", EInvoiceFormat: einvoice.XRechnungCII, CreatedAt: now})
	if err != nil {
		return uuid.Nil, err
	}
	q := func(s string) quantity.Quantity {
		v, err := quantity.Parse([]byte(`"` + s + `"`))
		if err != nil {
			panic(err)
		}
		return v
	}
	lines, sub, tax, total, err := invoices.ComputeLines([]invoices.LineInput{
		{Description: "Beratung & Konzeption", Quantity: q("7.5"), Unit: "HUR", UnitAmount: 12000, TaxRateBPS: 1900},
		{Description: "Software-Lizenz „Nordlicht Pro“", Quantity: q("1"), Unit: "C62", UnitAmount: 120000, TaxRateBPS: 1900},
		{Description: "Fachbuch", Quantity: q("2"), Unit: "H87", UnitAmount: 4990, TaxRateBPS: 700},
		{Description: "Schulung vor Ort", Quantity: q("2"), Unit: "DAY", UnitAmount: 95000, TaxRateBPS: 1900},
		{Description: "Versand", Quantity: q("1"), Unit: "LS", UnitAmount: 1500, TaxRateBPS: 1900},
		{Description: "Zeitschrift", Quantity: q("12"), Unit: "H87", UnitAmount: 890, TaxRateBPS: 700},
	})
	if err != nil {
		return uuid.Nil, err
	}
	terms := 30
	inv, err := invoices.InvoiceCreate(ctx, pool, &invoices.Invoice{ID: uuid.Must(uuid.NewV7()), CustomerID: c.ID, Currency: "EUR",
		Lines: lines, Subtotal: sub, TaxTotal: tax, Total: total, PaymentTermsDays: &terms, PurchaseOrder: "PO-2026-17",
		SupplyDate: &invoices.Date{Time: now.Truncate(24 * time.Hour)}, CreatedAt: now})
	if err != nil {
		return uuid.Nil, err
	}
	return inv.ID, store.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		locked, err := invoices.InvoiceLockTx(ctx, tx, inv.ID)
		if err != nil {
			return err
		}
		_, err = invoices.InvoiceIssueTx(ctx, tx, locked, invoices.DefaultNumberPrefix, now, invoices.Date{Time: now.Truncate(24 * time.Hour)})
		return err
	})
}
