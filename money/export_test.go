package money

import "sort"

// Codes lists the currency table's codes, sorted, for tests that walk it.
func Codes() []string {
	codes := make([]string, 0, len(currencies))
	for c := range currencies {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	return codes
}
