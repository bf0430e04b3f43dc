package sending

import (
	"bytes"
	"fmt"
	htmltemplate "html/template"
	texttemplate "text/template"

	"github.com/invoiced/invoiced/document"
)

// letter is what the mail says, in the document's language: the subject
// and the text, each a template over letterData. The HTML alternative is
// the same text, escaped.
type letter struct {
	subject, invoice, creditNote string
}

var letters = map[document.Language]letter{
	document.English: {
		subject:    `{{.Kind}} {{.Number}} from {{.Seller}}`,
		invoice:    "Hello,\n\nplease find attached our invoice {{.Number}} of {{.Date}} for {{.Total}}{{if .Due}}, due on {{.Due}}{{end}}.\n\nKind regards\n{{.Seller}}\n",
		creditNote: "Hello,\n\nplease find attached our credit note {{.Number}} of {{.Date}} for {{.Total}}, which corrects invoice {{.Corrects}}.\n\nKind regards\n{{.Seller}}\n",
	},
	document.German: {
		subject:    `{{.Kind}} {{.Number}} von {{.Seller}}`,
		invoice:    "Guten Tag,\n\nanbei erhalten Sie unsere Rechnung {{.Number}} vom {{.Date}} über {{.Total}}{{if .Due}}, fällig am {{.Due}}{{end}}.\n\nMit freundlichen Grüßen\n{{.Seller}}\n",
		creditNote: "Guten Tag,\n\nanbei erhalten Sie unsere Gutschrift {{.Number}} vom {{.Date}} über {{.Total}} zur Rechnung {{.Corrects}}.\n\nMit freundlichen Grüßen\n{{.Seller}}\n",
	},
	document.French: {
		subject:    `{{.Kind}} {{.Number}} de {{.Seller}}`,
		invoice:    "Bonjour,\n\nveuillez trouver ci-joint notre facture {{.Number}} du {{.Date}} d'un montant de {{.Total}}{{if .Due}}, à régler le {{.Due}}{{end}}.\n\nCordialement\n{{.Seller}}\n",
		creditNote: "Bonjour,\n\nveuillez trouver ci-joint notre avoir {{.Number}} du {{.Date}} d'un montant de {{.Total}}, qui rectifie la facture {{.Corrects}}.\n\nCordialement\n{{.Seller}}\n",
	},
}

// kinds name a document in a subject.
var kinds = map[document.Language]map[document.Kind]string{
	document.English: {document.KindInvoice: "Invoice", document.KindCreditNote: "Credit note"},
	document.German:  {document.KindInvoice: "Rechnung", document.KindCreditNote: "Gutschrift"},
	document.French:  {document.KindInvoice: "Facture", document.KindCreditNote: "Avoir"},
}

type letterData struct {
	Kind, Number, Seller, Date, Total, Due, Corrects string
}

// templates are parsed at start, so a broken one fails the process then.
var templates = func() map[document.Language][3]*texttemplate.Template {
	out := map[document.Language][3]*texttemplate.Template{}
	for lang, l := range letters {
		out[lang] = [3]*texttemplate.Template{
			texttemplate.Must(texttemplate.New("subject").Parse(l.subject)),
			texttemplate.Must(texttemplate.New("invoice").Parse(l.invoice)),
			texttemplate.Must(texttemplate.New("credit").Parse(l.creditNote)),
		}
	}
	return out
}()

var htmlPage = htmltemplate.Must(htmltemplate.New("html").Parse(
	`<!doctype html><html lang="{{.Lang}}"><body>{{range .Paragraphs}}<p>{{range $i, $l := .}}{{if $i}}<br>{{end}}{{$l}}{{end}}</p>{{end}}</body></html>`))

// message writes the mail that carries d: its subject, text and HTML, in
// d's language (English when it has none), the standard letter unless
// write writes another.
func message(d *document.Document, write Writer) (subject, text, html string, err error) {
	lang := d.Language
	if _, ok := letters[lang]; !ok {
		lang = document.English
	}
	if write != nil {
		if subject, text, err = write(d); err != nil {
			return "", "", "", err
		}
		html, err := htmlOf(lang, text)
		return subject, text, html, err
	}
	data := letterData{Kind: kinds[lang][d.Kind], Number: d.Number, Seller: d.Seller.Name,
		Date: lang.Date(d.IssueDate), Total: lang.Money(d.Total, d.Currency)}
	if !d.DueDate.IsZero() && d.Balance != nil && *d.Balance > 0 {
		data.Due = lang.Date(d.DueDate)
	}
	if d.Corrects != nil {
		data.Corrects = d.Corrects.Number
	}
	t := templates[lang]
	body := t[1]
	if d.Kind == document.KindCreditNote {
		body = t[2]
	}
	var s, b bytes.Buffer
	if err := t[0].Execute(&s, data); err != nil {
		return "", "", "", fmt.Errorf("mail subject: %w", err)
	}
	if err := body.Execute(&b, data); err != nil {
		return "", "", "", fmt.Errorf("mail text: %w", err)
	}
	h, err := htmlOf(lang, b.String())
	return s.String(), b.String(), h, err
}

// htmlOf is the HTML alternative of text: its paragraphs, escaped.
func htmlOf(lang document.Language, text string) (string, error) {
	var h bytes.Buffer
	if err := htmlPage.Execute(&h, map[string]any{"Lang": string(lang), "Paragraphs": paragraphs(text)}); err != nil {
		return "", fmt.Errorf("mail html: %w", err)
	}
	return h.String(), nil
}

// paragraphs splits text at blank lines, and each paragraph into its lines.
func paragraphs(text string) [][]string {
	var out [][]string
	for _, p := range bytes.Split(bytes.TrimSpace([]byte(text)), []byte("\n\n")) {
		var lines []string
		for _, l := range bytes.Split(p, []byte("\n")) {
			lines = append(lines, string(l))
		}
		out = append(out, lines)
	}
	return out
}
