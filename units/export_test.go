package units

import (
	"maps"
	"slices"
)

// Codes lists the embedded codes, sorted, for tests that compare them
// with the artefacts.
func Codes() []string { return slices.Sorted(maps.Keys(valid)) }

// RecName is a code's name in Recommendation 20 or 21, for tests.
func RecName(code string) string { return recNames[code] }

// Names returns names.tsv's text, for tests of its notice.
func Names() string { return namesTSV }
