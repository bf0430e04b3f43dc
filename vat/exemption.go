package vat

import (
	_ "embed"
	"strings"
)

//go:generate go run ./internal/gen

// vatexTxt is the VATEX code list of rule BR-CL-22, one code a line.
//
//go:embed vatex.txt
var vatexTxt string

var vatex = func() map[string]bool {
	m := make(map[string]bool)
	for _, l := range strings.Split(vatexTxt, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			m[l] = true
		}
	}
	return m
}()

// ValidExemptionCode reports whether code is a VAT exemption reason code
// (EN 16931 BT-121) of the VATEX list the artefacts accept (BR-CL-22):
// "VATEX-EU-AE", "VATEX-EU-132-1A", "VATEX-FR-FRANCHISE", …. The
// artefacts compare in upper case; this package keeps that one spelling,
// so "vatex-eu-ae" is not valid here.
func ValidExemptionCode(code string) bool {
	return vatex[code]
}
