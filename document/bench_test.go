package document_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
)

// BenchmarkRender renders the tests' one-page invoice: ms per document one
// at a time, and documents per second with a goroutine per core (`make
// bench-pdf` runs it with -cpu 2). Each document parses and subsets its
// two embedded fonts: fpdf keeps no font between documents. cpu-ms/doc is
// the process's CPU time (garbage collection included) per document, which
// other load on a shared machine does not inflate as it does wall time.
func BenchmarkRender(b *testing.B) {
	d := invoice("Müller & Søn")
	b.Run("sequential", func(b *testing.B) {
		cpu := cpuTime(b)
		for b.Loop() {
			if _, err := document.Render(d); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/doc")
		b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/doc")
	})
	b.Run("parallel", func(b *testing.B) {
		cpu := cpuTime(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := document.Render(d); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
		b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/doc")
	})
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
