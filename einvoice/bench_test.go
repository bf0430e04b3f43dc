package einvoice_test

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
)

// BenchmarkEInvoice is `make bench-einvoice`: documents per second on
// every core (-cpu 2: two goroutines) for UBL, CII and Factur-X, written
// from an issued invoice's frozen document (generation only, no
// database), and the PDF render as the reference, measured in the same
// run. Three rounds alternate the formats, a second each; it reports per
// format the median docs/s, CPU ms per document (the process's, garbage
// collection included, which other load on a shared machine inflates less
// than wall time) and the ratio of its docs/s to the PDF's.
func BenchmarkEInvoice(b *testing.B) {
	d := issued("EUR")
	d.Created, d.Modified = d.IssueDate, d.IssueDate
	inv := einvoice.Invoice{Document: d}
	formats := []struct {
		name string
		run  func() ([]byte, error)
	}{
		{"pdf", func() ([]byte, error) { return document.Render(d) }},
		{"ubl", func() ([]byte, error) { return einvoice.Generate(inv, einvoice.UBL) }},
		{"cii", func() ([]byte, error) { return einvoice.Generate(inv, einvoice.CII) }},
		{"facturx", func() ([]byte, error) { return einvoice.Generate(inv, einvoice.FacturX) }},
	}
	const rounds, window = 3, time.Second
	rate, cpu := map[string][]float64{}, map[string][]float64{}
	for b.Loop() {
		for range rounds {
			for _, f := range formats {
				n, elapsed, used := measure(b, f.run, window)
				rate[f.name] = append(rate[f.name], float64(n)/elapsed.Seconds())
				cpu[f.name] = append(cpu[f.name], float64(used.Microseconds())/1000/float64(n))
			}
		}
	}
	ref := median(rate["pdf"])
	for _, f := range formats {
		b.ReportMetric(median(rate[f.name]), f.name+"-docs/s")
		b.ReportMetric(median(cpu[f.name]), f.name+"-cpu-ms/doc")
		if f.name != "pdf" {
			b.ReportMetric(median(rate[f.name])/ref, f.name+"/pdf")
		}
	}
}

// measure runs run on GOMAXPROCS goroutines for window: how many
// documents, in how long, for how much CPU.
func measure(b *testing.B, run func() ([]byte, error), window time.Duration) (int64, time.Duration, time.Duration) {
	var n atomic.Int64
	var wg sync.WaitGroup
	start, cpu0 := time.Now(), cpuTime(b)
	deadline := start.Add(window)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if _, err := run(); err != nil {
					b.Error(err)
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return n.Load(), time.Since(start), cpuTime(b) - cpu0
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
