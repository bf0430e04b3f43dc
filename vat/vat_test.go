package vat_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/invoiced/invoiced/internal/en16931"
	"github.com/invoiced/invoiced/vat"
	"github.com/stretchr/testify/require"
)

// The embedded list is the artefacts' list: when CEN publishes another,
// this fails until go generate ./vat is run.
func TestExemptionCodesAreTheArtefactsList(t *testing.T) {
	t.Parallel()
	dir, err := en16931.Dir()
	require.NoError(t, err)
	want, err := en16931.CodeList(filepath.Join(dir, en16931.UBL), "BR-CL-22")
	require.NoError(t, err)
	missing, extra := en16931.Drift(want, vat.ExemptionCodes())
	require.Empty(t, missing, "in the artefacts, not in vatex.txt: run go generate ./vat")
	require.Empty(t, extra, "in vatex.txt, not in the artefacts: run go generate ./vat")
}

func TestValidExemptionCode(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"VATEX-EU-AE", "VATEX-EU-IC", "VATEX-EU-G", "VATEX-EU-O", "VATEX-EU-132", "VATEX-EU-132-1A", "VATEX-EU-79-C", "VATEX-FR-FRANCHISE"} {
		require.True(t, vat.ValidExemptionCode(code), code)
	}
	for _, code := range []string{"", "vatex-eu-ae", "VATEX-EU-S", "VATEX-EU-Z", "VATEX-EU-132-1R", " VATEX-EU-AE", "AE"} {
		require.False(t, vat.ValidExemptionCode(code), "%q", code)
	}
}

func TestParseCategory(t *testing.T) {
	t.Parallel()
	for _, c := range vat.Categories() {
		got, err := vat.ParseCategory(string(c))
		require.NoError(t, err)
		require.Equal(t, c, got)
	}
	require.Equal(t, []vat.Category{"S", "Z", "E", "AE", "K", "G", "O", "L", "M"}, vat.Categories())
	for _, s := range []string{"", "s", "ae", "X", "VAT", " S", "S ", "B", "IC"} {
		_, err := vat.ParseCategory(s)
		require.EqualError(t, err, "must be one of S (standard rated), Z (zero rated), E (exempt from VAT), AE (reverse charge), "+
			"K (intra-community supply), G (export outside the EU), O (not subject to VAT), L (IGIC, Canary Islands), M (IPSI, Ceuta and Melilla)", "%q", s)
	}
}

// spec is what EN 16931 asks of each category, and which of its rules say
// so (K's rules are BR-IC-*, L's BR-AF-*, M's BR-AG-*).
var spec = []struct {
	c            vat.Category
	rules        string
	okRates      []int64
	badRates     []int64
	exemption    bool
	reason, code string
	sellerVATID  bool
	buyerVATID   bool
}{
	{vat.Standard, "BR-S", []int64{1, 700, 1900, 2500, 10000}, []int64{0}, false, "", "", false, false},
	{vat.ZeroRated, "BR-Z", []int64{0}, []int64{1, 1900}, false, "", "", false, false},
	{vat.Exempt, "BR-E", []int64{0}, []int64{1, 1900}, true, "Exempt from VAT", "", false, false},
	{vat.ReverseCharge, "BR-AE", []int64{0}, []int64{1, 1900}, true, "Reverse charge", "VATEX-EU-AE", true, true},
	{vat.IntraCommunity, "BR-IC", []int64{0}, []int64{1, 1900}, true, "Intra-community supply", "VATEX-EU-IC", true, true},
	{vat.Export, "BR-G", []int64{0}, []int64{1, 1900}, true, "Export outside the EU", "VATEX-EU-G", true, false},
	{vat.OutsideScope, "BR-O", []int64{0}, []int64{1, 1900}, true, "Not subject to VAT", "VATEX-EU-O", false, false},
	{vat.CanaryIslands, "BR-AF", []int64{0, 300, 700, 1500, 10000}, nil, false, "", "", false, false},
	{vat.CeutaMelilla, "BR-AG", []int64{0, 50, 400, 10000}, nil, false, "", "", false, false},
}

func TestCheckRateFollowsEachCategorysRule(t *testing.T) {
	t.Parallel()
	require.Len(t, spec, len(vat.Categories()))
	for _, tc := range spec {
		for _, bps := range tc.okRates {
			require.NoError(t, tc.c.CheckRate(bps), "%s %d", tc.c, bps)
		}
		for _, bps := range tc.badRates {
			require.ErrorContains(t, tc.c.CheckRate(bps), "(EN 16931 "+tc.rules+"-05)", "%s %d", tc.c, bps)
		}
		for _, bps := range []int64{-1, -1900, 10001, 1 << 62} {
			require.EqualError(t, tc.c.CheckRate(bps), "a VAT rate must be between 0 and 10000 basis points (0 to 100 %)", "%s %d", tc.c, bps)
		}
	}
}

func TestCheckRateSaysWhatIsWrong(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		c    vat.Category
		bps  int64
		want string
	}{
		{vat.Standard, 0, "category S (standard rated) needs a rate above 0 % (EN 16931 BR-S-05): a supply without VAT is Z, E, AE, K, G or O"},
		{vat.ZeroRated, 1900, "category Z (zero rated) needs a rate of 0 %, not 19 % (EN 16931 BR-Z-05)"},
		{vat.ReverseCharge, 1950, "category AE (reverse charge) needs a rate of 0 %, not 19.5 % (EN 16931 BR-AE-05)"},
		{vat.IntraCommunity, 5, "category K (intra-community supply) needs a rate of 0 %, not 0.05 % (EN 16931 BR-IC-05)"},
		{vat.OutsideScope, 2000, "category O (not subject to VAT) carries no VAT rate, so its rate must be 0, not 20 % (EN 16931 BR-O-05)"},
		{"X", 0, "must be one of S (standard rated), Z (zero rated), E (exempt from VAT), AE (reverse charge), " +
			"K (intra-community supply), G (export outside the EU), O (not subject to VAT), L (IGIC, Canary Islands), M (IPSI, Ceuta and Melilla)"},
	} {
		require.EqualError(t, tc.c.CheckRate(tc.bps), tc.want)
	}
}

func TestExemptionsFollowEachCategorysRule(t *testing.T) {
	t.Parallel()
	for _, tc := range spec {
		require.Equal(t, tc.exemption, tc.c.NeedsExemption(), tc.c)
		reason, code := vat.DefaultExemption(tc.c)
		require.Equal(t, tc.reason, reason, tc.c)
		require.Equal(t, tc.code, code, tc.c)
		// The defaults pass the category's own check.
		require.NoError(t, tc.c.CheckExemption(reason, code), tc.c)
		if code != "" {
			require.True(t, vat.ValidExemptionCode(code), code)
		}
		rule := "(EN 16931 " + tc.rules + "-10)"
		if tc.exemption {
			require.ErrorContains(t, tc.c.CheckExemption("", ""), "needs an exemption reason or code "+rule, tc.c)
			require.NoError(t, tc.c.CheckExemption("Steuerfrei nach § 4 Nr. 14 UStG", ""), tc.c)
		} else {
			require.ErrorContains(t, tc.c.CheckExemption("Exempt", ""), "takes no exemption reason or code "+rule, tc.c)
			require.ErrorContains(t, tc.c.CheckExemption("", "VATEX-EU-132"), "takes no exemption reason or code "+rule, tc.c)
		}
	}
}

func TestCheckExemptionRefusesCodesThatDoNotFit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		c            vat.Category
		reason, code string
		want         string
	}{
		{vat.Exempt, "", "VATEX-EU-999", `exemption code "VATEX-EU-999" is not in the VATEX code list (EN 16931 BR-CL-22)`},
		{vat.ReverseCharge, "Reverse charge", "vatex-eu-ae", `exemption code "vatex-eu-ae" must be written in upper case: VATEX-EU-AE`},
		{vat.IntraCommunity, "", "VATEX-EU-AE", "exemption code VATEX-EU-AE means reverse charge: use it with category AE, not K"},
		{vat.Exempt, "Exempt", "VATEX-EU-G", "exemption code VATEX-EU-G means export outside the EU: use it with category G, not E"},
		{vat.Export, "", "VATEX-EU-O", "exemption code VATEX-EU-O means not subject to VAT: use it with category O, not G"},
		{vat.OutsideScope, "", "VATEX-EU-IC", "exemption code VATEX-EU-IC means intra-community supply: use it with category K, not O"},
	} {
		require.EqualError(t, tc.c.CheckExemption(tc.reason, tc.code), tc.want)
	}
	// A code naming an article goes with E, alone or with a text.
	require.NoError(t, vat.Exempt.CheckExemption("", "VATEX-EU-132-1I"))
	require.NoError(t, vat.Exempt.CheckExemption("Exempt: education", "VATEX-EU-132-1I"))
	require.NoError(t, vat.Exempt.CheckExemption("TVA non applicable, art. 293 B du CGI", "VATEX-FR-FRANCHISE"))
}

func TestWhatAnInvoiceNeedsForEachCategory(t *testing.T) {
	t.Parallel()
	for _, tc := range spec {
		require.Equal(t, tc.sellerVATID, vat.RequiresSellerVATID(tc.c), tc.c)
		require.Equal(t, tc.buyerVATID, vat.RequiresBuyerVATID(tc.c), tc.c)
		require.Equal(t, tc.c == vat.IntraCommunity, vat.RequiresSupplyDate(tc.c), tc.c)
		require.Equal(t, tc.c == vat.OutsideScope, vat.Exclusive(tc.c), tc.c)
	}
}

// The rules the package cites say what the package does: each is read
// from the artefacts, so a citation of a rule that does not say so fails.
func TestTheCitedRulesSaySo(t *testing.T) {
	t.Parallel()
	dir, err := en16931.Dir()
	require.NoError(t, err)
	xslt, err := os.ReadFile(filepath.Join(dir, en16931.UBL))
	require.NoError(t, err)
	text := func(rule string) string {
		m := regexp.MustCompile(`<svrl:text>\[` + rule + `\]-([^<]*)</svrl:text>`).FindSubmatch(xslt)
		require.NotNil(t, m, "the artefacts have no rule %s", rule)
		return regexp.MustCompile(`\s+`).ReplaceAllString(string(m[1]), " ")
	}
	for _, tc := range spec {
		rate := text(tc.rules + "-05")
		switch tc.c {
		case vat.Standard:
			require.Contains(t, rate, "VAT rate (BT-152) shall be greater than zero")
		case vat.OutsideScope:
			require.Contains(t, rate, "shall not contain an Invoiced item VAT rate (BT-152)")
		case vat.CanaryIslands, vat.CeutaMelilla:
			require.Contains(t, rate, "VAT rate (BT-152) shall be 0 (zero) or greater than zero")
		default:
			require.Contains(t, rate, "VAT rate (BT-152) shall be 0 (zero)")
			require.NotContains(t, rate, "greater")
		}

		exemption := text(tc.rules + "-10")
		if tc.exemption {
			require.Contains(t, exemption, "shall have a VAT exemption reason code (BT-121)", tc.c)
		} else {
			require.Contains(t, exemption, "shall not have a VAT exemption reason code (BT-121) or VAT exemption reason text (BT-120)", tc.c)
		}

		parties := text(tc.rules + "-02")
		switch tc.c {
		case vat.IntraCommunity:
			require.Contains(t, parties, "shall contain the Seller VAT Identifier (BT-31) or the Seller tax representative VAT identifier (BT-63) and the Buyer VAT identifier (BT-48)")
		case vat.Export:
			require.Contains(t, parties, "shall contain the Seller VAT Identifier (BT-31) or the Seller tax representative VAT identifier (BT-63).")
		case vat.ReverseCharge:
			// Stricter here than the artefacts, which take a tax or legal
			// registration number in place of either VAT identifier: see
			// the package comment.
			require.Contains(t, parties, "the Buyer VAT identifier (BT-48) and/or the Buyer legal registration identifier (BT-47)")
		case vat.OutsideScope:
			require.Contains(t, parties, "shall not contain the Seller VAT identifier (BT-31), the Seller tax representative VAT identifier (BT-63) or the Buyer VAT identifier (BT-48)")
		default:
			require.Contains(t, parties, "shall contain the Seller VAT Identifier (BT-31), the Seller tax registration identifier (BT-32) and/or the Seller tax representative VAT identifier (BT-63).")
		}
	}
	require.Contains(t, text("BR-IC-11"), "the Actual delivery date (BT-72) or the Invoicing period (BG-14) shall not be blank")
	for _, rule := range []string{"BR-O-11", "BR-O-12", "BR-O-13", "BR-O-14"} {
		require.Contains(t, text(rule), `"Not subject to VAT" shall not contain`)
	}
	require.Contains(t, text("BR-CL-22"), "CEF VATEX code list")
}

func TestWordingIsTheSentenceTheInvoicePrints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		c          vat.Category
		en, de, fr string
	}{
		{vat.ReverseCharge,
			"Reverse charge: VAT to be accounted for by the recipient, Article 196 of Directive 2006/112/EC",
			"Steuerschuldnerschaft des Leistungsempfängers (Reverse Charge, Art. 196 MwStSystRL)",
			"Autoliquidation : TVA due par le preneur, article 196 de la directive 2006/112/CE"},
		{vat.IntraCommunity,
			"Exempt intra-community supply, Article 138 of Directive 2006/112/EC",
			"Steuerfreie innergemeinschaftliche Lieferung (§ 4 Nr. 1 Buchst. b UStG, Art. 138 MwStSystRL)",
			"Exonération de TVA, article 262 ter I du CGI (livraison intracommunautaire)"},
		{vat.Export,
			"Exempt export outside the EU, Article 146 of Directive 2006/112/EC",
			"Steuerfreie Ausfuhrlieferung (§ 4 Nr. 1 Buchst. a UStG, Art. 146 MwStSystRL)",
			"Exonération de TVA, article 262 I du CGI (exportation hors de l'Union européenne)"},
		{vat.Exempt,
			"Exempt from VAT under Directive 2006/112/EC (such as Article 132 or 135) or the corresponding national provision",
			"Steuerfreier Umsatz nach der MwStSystRL (etwa Art. 132 oder 135) oder der entsprechenden nationalen Vorschrift",
			"Exonération de TVA en application de la directive 2006/112/CE (par exemple ses articles 132 ou 135) ou de la disposition nationale correspondante"},
		{vat.OutsideScope,
			"Not subject to VAT: the supply is outside the scope of VAT",
			"Nicht steuerbarer Umsatz (nicht im Anwendungsbereich der Umsatzsteuer)",
			"Opération hors du champ d'application de la TVA"},
		{vat.ZeroRated,
			"Zero rated: VAT charged at 0 %",
			"Nullsatz: Umsatzsteuer mit einem Steuersatz von 0 %",
			"Taux zéro : TVA au taux de 0 %"},
		// Taxed categories print no sentence: the rate and the tax say it.
		{vat.Standard, "", "", ""},
		{vat.CanaryIslands, "", "", ""},
		{vat.CeutaMelilla, "", "", ""},
		{"X", "", "", ""},
	} {
		require.Equal(t, tc.en, vat.Wording(tc.c, "en"), tc.c)
		require.Equal(t, tc.de, vat.Wording(tc.c, "de"), tc.c)
		require.Equal(t, tc.fr, vat.Wording(tc.c, "fr"), tc.c)
		// A region does not change the language; another language, or no
		// tag, gets English.
		require.Equal(t, tc.de, vat.Wording(tc.c, "de-AT"), tc.c)
		require.Equal(t, tc.fr, vat.Wording(tc.c, "fr-BE"), tc.c)
		require.Equal(t, tc.en, vat.Wording(tc.c, "es"), tc.c)
		require.Equal(t, tc.en, vat.Wording(tc.c, ""), tc.c)
	}
}

func TestNameLabelsABreakdownRow(t *testing.T) {
	t.Parallel()
	for _, c := range vat.Categories() {
		for _, lang := range []string{"en", "de", "fr"} {
			require.NotEmpty(t, c.Name(lang), "%s %s", c, lang)
		}
	}
	require.Equal(t, "Reverse charge", vat.ReverseCharge.Name("en"))
	require.Equal(t, "Steuerschuldnerschaft des Leistungsempfängers", vat.ReverseCharge.Name("de-CH"))
	require.Equal(t, "Autoliquidation", vat.ReverseCharge.Name("fr"))
	require.Equal(t, "Standard rated", vat.Standard.Name("it"))
	require.Equal(t, "X", vat.Category("X").Name("en"))
}
