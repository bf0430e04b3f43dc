package document_test

import (
	"testing"

	"github.com/invoiced/invoiced/document"
)

// BenchmarkRender renders the tests' one-page invoice: ms per document one
// at a time, and documents per second with a goroutine per core (`make
// bench-pdf` runs it with -cpu 2). Each document parses and subsets its
// two embedded fonts: fpdf keeps no font between documents.
func BenchmarkRender(b *testing.B) {
	d := invoice("Müller & Søn")
	b.Run("sequential", func(b *testing.B) {
		for b.Loop() {
			if _, err := document.Render(d); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/doc")
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := document.Render(d); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
	})
}
