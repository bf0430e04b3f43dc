package document

// labels are the words and sentences a document prints in one language;
// the VAT categories' names and legal wording are package vat's, the
// units' names package units'.
type labels struct {
	invoice, creditNote string
	// draftTitle follows the kind in the title of a document without a
	// number: "Invoice (draft)".
	draftTitle string
	// draft and void stamp a document; draftNote and voidNote say why.
	draft, void, draftNote, voidNote string
	// page heads the footer's page count: "page 1/2".
	page string
	// colon joins a label and its value: ": ", or " : " in French.
	colon string

	number, numberOnIssue, issueDate, onIssue, supplyDate, servicePeriod, dueDate string
	purchaseOrder, buyerReference, correctsInvoice, invoiceDate, creditNotes      string

	billTo, tradingAs, vatID, taxNumber, registration, contact, phone, email string

	// amountsIn heads the line table: "Amounts in %s".
	amountsIn                                              string
	description, quantity, unit, unitPrice, vat, netAmount string
	noLines                                                string

	subtotal, vatTotal, total, credited, paid, balanceDue string

	vatBreakdown, category, rate, taxableAmount, vatAmount, exemptionReason string

	payment string
	// termsDay and termsDays are the payment terms, in days, for a
	// number the language's plural rules call singular or plural; termsNow
	// for 0 days.
	termsDay, termsDays, termsNow string
	accountHolder, iban, bic      string

	payments, date, paymentColumn, amount string
	// bankTransfer, card and cash name a payment's method; reversed heads
	// the row of a payment taken back.
	bankTransfer, card, cash, reversed string
	// scanToPay explains the EPC QR code beside the bank details.
	scanToPay    string
	note, reason string
}

// texts are the labels of each language. The terms and titles follow
// what invoices in each language say; German names a correcting document
// "Rechnungskorrektur", since "Gutschrift" in § 14 Abs. 2 UStG is an
// invoice the customer issues (self-billing) and would mislabel it.
var texts = map[Language]*labels{
	English: {
		invoice: "Invoice", creditNote: "Credit note", draftTitle: "(draft)",
		draft: "DRAFT", void: "VOID",
		draftNote: "a preview as it will be issued; its number, issue date and seller are fixed on issue.",
		voidNote:  "this invoice was voided and is not to be paid.",
		page:      "page", colon: ": ",

		number: "Number", numberOnIssue: "assigned on issue", issueDate: "Issue date", onIssue: "on issue",
		supplyDate: "Date of supply", servicePeriod: "Service period", dueDate: "Due date",
		purchaseOrder: "Purchase order", buyerReference: "Buyer reference",
		correctsInvoice: "Corrects invoice", invoiceDate: "Invoice date", creditNotes: "Credit notes",

		billTo: "Bill to", tradingAs: "Trading as", vatID: "VAT ID", taxNumber: "Tax number",
		registration: "Registration", contact: "Contact", phone: "Phone", email: "Email",

		amountsIn:   "Amounts in %s",
		description: "Description", quantity: "Qty", unit: "Unit", unitPrice: "Unit price", vat: "VAT", netAmount: "Net amount",
		noLines: "No lines.",

		subtotal: "Subtotal", vatTotal: "VAT", total: "Total", credited: "Credited", paid: "Paid", balanceDue: "Balance due",

		vatBreakdown: "VAT breakdown", category: "VAT category", rate: "Rate", taxableAmount: "Net amount", vatAmount: "VAT",
		exemptionReason: "Exemption reason",

		payment:  "Payment",
		termsDay: "Payable within %s day", termsDays: "Payable within %s days", termsNow: "Payable on receipt",
		accountHolder: "Account holder", iban: "IBAN", bic: "BIC",

		payments: "Payments", date: "Date", paymentColumn: "Payment", amount: "Amount",
		bankTransfer: "Bank transfer", card: "Card", cash: "Cash", reversed: "Reversed",
		scanToPay: "Scan the code with a banking app to pay the balance due by transfer.",
		note:      "Note", reason: "Reason",
	},
	German: {
		invoice: "Rechnung", creditNote: "Rechnungskorrektur", draftTitle: "(Entwurf)",
		draft: "ENTWURF", void: "STORNIERT",
		draftNote: "eine Vorschau, wie sie ausgestellt wird; Nummer, Ausstellungsdatum und Verkäufer werden bei der Ausstellung festgelegt.",
		voidNote:  "diese Rechnung wurde storniert und ist nicht zu bezahlen.",
		page:      "Seite", colon: ": ",

		number: "Nummer", numberOnIssue: "wird bei Ausstellung vergeben", issueDate: "Ausstellungsdatum", onIssue: "bei Ausstellung",
		supplyDate: "Leistungsdatum", servicePeriod: "Leistungszeitraum", dueDate: "Fällig am",
		purchaseOrder: "Bestellnummer", buyerReference: "Käuferreferenz",
		correctsInvoice: "Korrigiert Rechnung", invoiceDate: "Rechnungsdatum", creditNotes: "Rechnungskorrekturen",

		billTo: "Rechnungsempfänger", tradingAs: "Handelsname", vatID: "USt-IdNr.", taxNumber: "Steuernummer",
		registration: "Registereintrag", contact: "Kontakt", phone: "Telefon", email: "E-Mail",

		amountsIn:   "Beträge in %s",
		description: "Beschreibung", quantity: "Menge", unit: "Einheit", unitPrice: "Einzelpreis", vat: "USt.", netAmount: "Nettobetrag",
		noLines: "Keine Positionen.",

		subtotal: "Summe netto", vatTotal: "Umsatzsteuer", total: "Gesamtbetrag", credited: "Gutgeschrieben", paid: "Bezahlt", balanceDue: "Offener Betrag",

		vatBreakdown: "Umsatzsteuer nach Steuersatz", category: "Steuerkategorie", rate: "Satz", taxableAmount: "Nettobetrag", vatAmount: "Umsatzsteuer",
		exemptionReason: "Grund der Steuerbefreiung",

		payment:  "Zahlung",
		termsDay: "Zahlbar innerhalb von %s Tag", termsDays: "Zahlbar innerhalb von %s Tagen", termsNow: "Zahlbar sofort nach Erhalt",
		accountHolder: "Kontoinhaber", iban: "IBAN", bic: "BIC",

		payments: "Zahlungen", date: "Datum", paymentColumn: "Zahlung", amount: "Betrag",
		bankTransfer: "Überweisung", card: "Kartenzahlung", cash: "Barzahlung", reversed: "Rückbuchung",
		scanToPay: "Scannen Sie den Code mit Ihrer Banking-App, um den offenen Betrag zu überweisen.",
		note:      "Hinweis", reason: "Grund",
	},
	French: {
		invoice: "Facture", creditNote: "Avoir", draftTitle: "(brouillon)",
		draft: "BROUILLON", void: "ANNULÉE",
		draftNote: "un aperçu tel qu'il sera émis ; le numéro, la date d'émission et le vendeur sont fixés à l'émission.",
		voidNote:  "cette facture a été annulée et ne doit pas être payée.",
		page:      "page", colon: " : ",

		number: "Numéro", numberOnIssue: "attribué à l'émission", issueDate: "Date d'émission", onIssue: "à l'émission",
		supplyDate: "Date de livraison", servicePeriod: "Période de prestation", dueDate: "Date d'échéance",
		purchaseOrder: "Bon de commande", buyerReference: "Référence acheteur",
		correctsInvoice: "Rectifie la facture", invoiceDate: "Date de la facture", creditNotes: "Avoirs",

		billTo: "Facturé à", tradingAs: "Nom commercial", vatID: "N° TVA", taxNumber: "N° fiscal",
		registration: "Immatriculation", contact: "Contact", phone: "Tél.", email: "E-mail",

		amountsIn:   "Montants en %s",
		description: "Désignation", quantity: "Qté", unit: "Unité", unitPrice: "Prix unitaire", vat: "TVA", netAmount: "Montant HT",
		noLines: "Aucune ligne.",

		subtotal: "Total HT", vatTotal: "TVA", total: "Total TTC", credited: "Avoirs déduits", paid: "Payé", balanceDue: "Reste à payer",

		vatBreakdown: "Récapitulatif de la TVA", category: "Catégorie de TVA", rate: "Taux", taxableAmount: "Base HT", vatAmount: "TVA",
		exemptionReason: "Motif d'exonération",

		payment:  "Paiement",
		termsDay: "Payable sous %s jour", termsDays: "Payable sous %s jours", termsNow: "Payable à réception",
		accountHolder: "Titulaire du compte", iban: "IBAN", bic: "BIC",

		payments: "Paiements", date: "Date", paymentColumn: "Paiement", amount: "Montant",
		bankTransfer: "Virement", card: "Carte bancaire", cash: "Espèces", reversed: "Annulation",
		scanToPay: "Scannez le code avec votre application bancaire pour virer le solde dû.",
		note:      "Remarque", reason: "Motif",
	},
}
