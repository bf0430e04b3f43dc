package vat

import (
	"maps"
	"slices"
)

// ExemptionCodes lists the embedded VATEX codes, sorted, for tests that
// compare them with the artefacts.
func ExemptionCodes() []string { return slices.Sorted(maps.Keys(vatex)) }
