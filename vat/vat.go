// Package vat holds the rules of a line's VAT category: the codes of UNCL
// 5305 that EN 16931 uses, and what each requires of an invoice, as the
// CEN validation artefacts (release validation-1.3.16) check it and as
// Article 226 of Directive 2006/112/EC requires it to be printed.
//
//	code  category                 rate (BT-152)  exemption reason  seller         buyer
//	S     standard rated           above 0        none (BR-S-10)    VAT or tax id
//	Z     zero rated               0              none (BR-Z-10)    VAT or tax id
//	E     exempt from VAT          0              text or code      VAT or tax id
//	AE    reverse charge           0              text or code      VAT id         VAT id
//	K     intra-community supply   0              text or code      VAT id         VAT id
//	G     export outside the EU    0              text or code      VAT id
//	O     not subject to VAT       none (0 here)  text or code
//	L     IGIC, Canary Islands     0 or above     none (BR-AF-10)   VAT or tax id
//	M     IPSI, Ceuta and Melilla  0 or above     none (BR-AG-10)   VAT or tax id
//
// Beyond a line: an invoice with an O line has only O lines (BR-O-11 to
// BR-O-14), and one with a K line has a supply date or period (BR-IC-11)
// and a deliver-to country (BR-IC-12). An e-invoice with an O line names
// neither party's VAT identifier (BR-O-02), though the document for
// people may.
//
// The artefacts let AE's seller and buyer show a tax registration or
// legal registration number instead of a VAT identifier (BR-AE-02); this
// package asks for both VAT identifiers, as Article 226 names them: the
// seller's, under which it supplies (point 3), and the customer's, under
// which it receives a supply it pays the VAT on (point 4).
package vat

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/invoiced/invoiced/money"
	"golang.org/x/text/language"
)

// Category is a VAT category code of UNCL 5305 (EN 16931 BT-151).
type Category string

// The categories EN 16931 uses.
const (
	Standard       Category = "S"
	ZeroRated      Category = "Z"
	Exempt         Category = "E"
	ReverseCharge  Category = "AE"
	IntraCommunity Category = "K"
	Export         Category = "G"
	OutsideScope   Category = "O"
	CanaryIslands  Category = "L"
	CeutaMelilla   Category = "M"
)

// rateRule says which rates a category allows.
type rateRule int

const (
	ratePositive    rateRule = iota // above 0
	rateZero                        // exactly 0
	rateNone                        // no rate at all, held as 0
	rateNonNegative                 // 0 or above
)

// rules is what one category requires. rule prefixes name the
// artefacts' rule family: "BR-IC" for K, "BR-AF" for L, "BR-AG" for M.
type rules struct {
	label     string // English, for messages
	rules     string
	rate      rateRule
	exemption bool // needs an exemption reason text or code (BR-*-10); else none is allowed
	reason    string
	code      string
	sellerVAT bool // a tax number does not do
	buyerVAT  bool
	names     map[string]string
	wording   map[string]string
}

// order lists the categories as Categories returns them.
var order = []Category{Standard, ZeroRated, Exempt, ReverseCharge, IntraCommunity, Export, OutsideScope, CanaryIslands, CeutaMelilla}

var categories = map[Category]rules{
	Standard: {
		label: "standard rated", rules: "BR-S", rate: ratePositive,
		names: map[string]string{"en": "Standard rated", "de": "Steuerpflichtig", "fr": "Soumis à la TVA"},
	},
	ZeroRated: {
		label: "zero rated", rules: "BR-Z", rate: rateZero,
		names: map[string]string{"en": "Zero rated", "de": "Nullsatz", "fr": "Taux zéro"},
		wording: map[string]string{
			"en": "Zero rated: VAT charged at 0 %",
			"de": "Nullsatz: Umsatzsteuer mit einem Steuersatz von 0 %",
			"fr": "Taux zéro : TVA au taux de 0 %",
		},
	},
	// No VATEX code is the default: exemptions rest on different
	// provisions (Article 132's public-interest activities, 135's finance
	// and land, a member state's small-business scheme, …), so any one
	// code would state a legal basis the seller may not have; BR-E-10
	// takes the text alone.
	Exempt: {
		label: "exempt from VAT", rules: "BR-E", rate: rateZero, exemption: true,
		reason: "Exempt from VAT",
		names:  map[string]string{"en": "Exempt from VAT", "de": "Steuerbefreit", "fr": "Exonéré de TVA"},
		wording: map[string]string{
			"en": "Exempt from VAT under Directive 2006/112/EC (such as Article 132 or 135) or the corresponding national provision",
			"de": "Steuerfreier Umsatz nach der MwStSystRL (etwa Art. 132 oder 135) oder der entsprechenden nationalen Vorschrift",
			"fr": "Exonération de TVA en application de la directive 2006/112/CE (par exemple ses articles 132 ou 135) ou de la disposition nationale correspondante",
		},
	},
	ReverseCharge: {
		label: "reverse charge", rules: "BR-AE", rate: rateZero, exemption: true,
		reason: "Reverse charge", code: "VATEX-EU-AE", sellerVAT: true, buyerVAT: true,
		names: map[string]string{"en": "Reverse charge", "de": "Steuerschuldnerschaft des Leistungsempfängers", "fr": "Autoliquidation"},
		wording: map[string]string{
			"en": "Reverse charge: VAT to be accounted for by the recipient, Article 196 of Directive 2006/112/EC",
			"de": "Steuerschuldnerschaft des Leistungsempfängers (Reverse Charge, Art. 196 MwStSystRL)",
			"fr": "Autoliquidation : TVA due par le preneur, article 196 de la directive 2006/112/CE",
		},
	},
	IntraCommunity: {
		label: "intra-community supply", rules: "BR-IC", rate: rateZero, exemption: true,
		reason: "Intra-community supply", code: "VATEX-EU-IC", sellerVAT: true, buyerVAT: true,
		names: map[string]string{"en": "Intra-community supply", "de": "Innergemeinschaftliche Lieferung", "fr": "Livraison intracommunautaire"},
		wording: map[string]string{
			"en": "Exempt intra-community supply, Article 138 of Directive 2006/112/EC",
			"de": "Steuerfreie innergemeinschaftliche Lieferung (§ 4 Nr. 1 Buchst. b UStG, Art. 138 MwStSystRL)",
			"fr": "Exonération de TVA, article 262 ter I du CGI (livraison intracommunautaire)",
		},
	},
	Export: {
		label: "export outside the EU", rules: "BR-G", rate: rateZero, exemption: true,
		reason: "Export outside the EU", code: "VATEX-EU-G", sellerVAT: true,
		names: map[string]string{"en": "Export outside the EU", "de": "Ausfuhr aus der EU", "fr": "Exportation hors de l'UE"},
		wording: map[string]string{
			"en": "Exempt export outside the EU, Article 146 of Directive 2006/112/EC",
			"de": "Steuerfreie Ausfuhrlieferung (§ 4 Nr. 1 Buchst. a UStG, Art. 146 MwStSystRL)",
			"fr": "Exonération de TVA, article 262 I du CGI (exportation hors de l'Union européenne)",
		},
	},
	OutsideScope: {
		label: "not subject to VAT", rules: "BR-O", rate: rateNone, exemption: true,
		reason: "Not subject to VAT", code: "VATEX-EU-O",
		names: map[string]string{"en": "Not subject to VAT", "de": "Nicht steuerbar", "fr": "Hors du champ de la TVA"},
		wording: map[string]string{
			"en": "Not subject to VAT: the supply is outside the scope of VAT",
			"de": "Nicht steuerbarer Umsatz (nicht im Anwendungsbereich der Umsatzsteuer)",
			"fr": "Opération hors du champ d'application de la TVA",
		},
	},
	CanaryIslands: {
		label: "IGIC, Canary Islands", rules: "BR-AF", rate: rateNonNegative,
		names: map[string]string{"en": "IGIC (Canary Islands)", "de": "IGIC (Kanarische Inseln)", "fr": "IGIC (îles Canaries)"},
	},
	CeutaMelilla: {
		label: "IPSI, Ceuta and Melilla", rules: "BR-AG", rate: rateNonNegative,
		names: map[string]string{"en": "IPSI (Ceuta and Melilla)", "de": "IPSI (Ceuta und Melilla)", "fr": "IPSI (Ceuta et Melilla)"},
	},
}

// Categories returns every category, in the order of EN 16931's rules.
func Categories() []Category {
	return append([]Category(nil), order...)
}

// errCategory lists what a category may be.
var errCategory = func() error {
	var b strings.Builder
	b.WriteString("must be one of ")
	for i, c := range order {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s)", c, categories[c].label)
	}
	return errors.New(b.String())
}()

// ParseCategory returns the category with code s ("S", "AE", …; upper
// case, as UNCL 5305 writes them), or an error listing them all.
func ParseCategory(s string) (Category, error) {
	c := Category(s)
	if _, ok := categories[c]; !ok {
		return "", errCategory
	}
	return c, nil
}

// of returns c's rules, or an error when c is not a category.
func of(c Category) (rules, error) {
	r, ok := categories[c]
	if !ok {
		return rules{}, errCategory
	}
	return r, nil
}

// describe is "category S (standard rated)", for messages.
func describe(c Category, r rules) string {
	return fmt.Sprintf("category %s (%s)", c, r.label)
}

// percent shows basis points as a percentage: 1950 is "19.5 %".
func percent(bps int64) string {
	s := strconv.FormatInt(bps/100, 10)
	if f := bps % 100; f != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%02d", f), "0")
	}
	return s + " %"
}

// CheckRate refuses a rate in basis points (1900 is 19 %) that c does not
// allow, naming the artefacts' rule: S needs a rate above 0 (BR-S-05); Z,
// E, AE, K and G a rate of 0 (BR-Z-05, …); O has no rate at all
// (BR-O-05), which a rate of 0 stands for here; L and M take any rate
// (BR-AF-05, BR-AG-05). Every rate is between 0 and
// money.MaxTaxRateBPS.
func (c Category) CheckRate(bps int64) error {
	r, err := of(c)
	if err != nil {
		return err
	}
	if bps < 0 || bps > money.MaxTaxRateBPS {
		return fmt.Errorf("a VAT rate must be between 0 and %d basis points (0 to 100 %%)", money.MaxTaxRateBPS)
	}
	rule := r.rules + "-05"
	switch {
	case r.rate == ratePositive && bps == 0:
		return fmt.Errorf("%s needs a rate above 0 %% (EN 16931 %s): a supply without VAT is Z, E, AE, K, G or O", describe(c, r), rule)
	case r.rate == rateZero && bps != 0:
		return fmt.Errorf("%s needs a rate of 0 %%, not %s (EN 16931 %s)", describe(c, r), percent(bps), rule)
	case r.rate == rateNone && bps != 0:
		return fmt.Errorf("%s carries no VAT rate, so its rate must be 0, not %s (EN 16931 %s)", describe(c, r), percent(bps), rule)
	}
	return nil
}

// NeedsExemption reports whether a line of c must state why it carries no
// VAT, by an exemption reason text or a VATEX code: E, AE, K, G and O do
// (BR-E-10, BR-AE-10, BR-IC-10, BR-G-10, BR-O-10). The others must not
// state one (BR-S-10, BR-Z-10, BR-AF-10, BR-AG-10).
func (c Category) NeedsExemption() bool {
	return categories[c].exemption
}

// DefaultExemption returns the exemption reason text and VATEX code a
// line of c carries when its author gives none: the wording of the
// artefacts' rules for AE, K, G and O with their codes, "Exempt from VAT"
// with no code for E (no one code fits every exemption), and nothing for
// a category that takes no reason.
func DefaultExemption(c Category) (reason, code string) {
	r := categories[c]
	return r.reason, r.code
}

// owners maps the VATEX codes that mean one category to it.
var owners = map[string]Category{
	"VATEX-EU-AE": ReverseCharge,
	"VATEX-EU-IC": IntraCommunity,
	"VATEX-EU-G":  Export,
	"VATEX-EU-O":  OutsideScope,
}

// CheckExemption refuses an exemption reason text and VATEX code that
// c does not allow: a code outside the VATEX list (BR-CL-22), a reason
// for a category that takes none (S, Z, L, M), none for one that needs
// it (E, AE, K, G, O), or a code that means another category
// (VATEX-EU-AE is a reverse charge, not an export).
func (c Category) CheckExemption(reason, code string) error {
	r, err := of(c)
	if err != nil {
		return err
	}
	if code != "" && !ValidExemptionCode(code) {
		if ValidExemptionCode(strings.ToUpper(code)) {
			return fmt.Errorf("exemption code %q must be written in upper case: %s", code, strings.ToUpper(code))
		}
		return fmt.Errorf("exemption code %q is not in the VATEX code list (EN 16931 BR-CL-22)", code)
	}
	switch {
	case !r.exemption && (reason != "" || code != ""):
		return fmt.Errorf("%s takes no exemption reason or code (EN 16931 %s-10)", describe(c, r), r.rules)
	case r.exemption && reason == "" && code == "":
		return fmt.Errorf("%s needs an exemption reason or code (EN 16931 %s-10)", describe(c, r), r.rules)
	}
	if owner, ok := owners[code]; ok && owner != c {
		return fmt.Errorf("exemption code %s means %s: use it with category %s, not %s", code, categories[owner].label, owner, c)
	}
	return nil
}

// RequiresSellerVATID reports whether an invoice with a line of c needs
// the seller's VAT identifier, where a national tax number does not do:
// AE (see the package comment), K (BR-IC-02) and G (BR-G-02). Every other
// category but O needs one or the other (BR-S-02, BR-Z-02, BR-E-02,
// BR-AF-02, BR-AG-02).
func RequiresSellerVATID(c Category) bool {
	return categories[c].sellerVAT
}

// RequiresBuyerVATID reports whether an invoice with a line of c needs
// the buyer's VAT identifier: AE (Article 226(4); BR-AE-02) and K
// (BR-IC-02).
func RequiresBuyerVATID(c Category) bool {
	return categories[c].buyerVAT
}

// RequiresSupplyDate reports whether an invoice with a line of c needs
// the date of supply or an invoicing period: K (BR-IC-11).
func RequiresSupplyDate(c Category) bool {
	return c == IntraCommunity
}

// Exclusive reports whether a line of c rules out lines of any other
// category on the same invoice: O (BR-O-11 to BR-O-14).
func Exclusive(c Category) bool {
	return c == OutsideScope
}

// baseLanguage returns the language of a BCP 47 tag ("de" for "de-AT"),
// or "en" when the tag does not parse.
func baseLanguage(tag string) string {
	t, err := language.Parse(tag)
	if err != nil {
		return "en"
	}
	b, _ := t.Base()
	return b.String()
}

// Name returns c's name for a VAT breakdown read in lang (en, de or fr;
// another language gets English): "Reverse charge",
// "Steuerschuldnerschaft des Leistungsempfängers", "Autoliquidation". It
// returns c's code when c is not a category.
func (c Category) Name(lang string) string {
	return pick(categories[c].names, lang, string(c))
}

// Wording returns the sentence an invoice with lines of c prints in lang
// (en, de or fr; another language gets English), or "" when c needs none
// (S, L, M, and what is not a category). Article 226 of Directive
// 2006/112/EC requires "Reverse charge" for AE (point 11a) and a
// reference to the exemption for E, K and G (point 11); § 14 Abs. 4 Nr. 8
// and § 14a UStG and Article 242 nonies A of Annex II to the CGI ask the
// same in Germany and France. The sentences:
//
//   - AE cites Article 196, the reverse charge on services from a supplier
//     established in another member state, the common case; a domestic
//     reverse charge (Articles 199 and 199a, § 13b UStG) states its own
//     provision in the exemption reason.
//   - K cites Article 138 with § 4 Nr. 1 Buchst. b UStG or Article 262 ter
//     I of the CGI; G cites Article 146 with § 4 Nr. 1 Buchst. a UStG or
//     Article 262 I of the CGI.
//   - E names the usual articles (132, 135) as examples only: Article
//     226(11) accepts any reference showing the supply is exempt, and the
//     exempt lines' own reason names the provision that applies.
//   - Z and O state the rate or that the supply is out of scope.
func Wording(c Category, lang string) string {
	return pick(categories[c].wording, lang, "")
}

// pick returns byLang's text for tag's language, else its English text,
// else fallback.
func pick(byLang map[string]string, tag, fallback string) string {
	if s, ok := byLang[baseLanguage(tag)]; ok {
		return s
	}
	if s, ok := byLang["en"]; ok {
		return s
	}
	return fallback
}
