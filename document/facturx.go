package document

import (
	"bytes"
	"compress/zlib"
	"crypto/md5"
	_ "embed"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"text/template"
	"time"

	"codeberg.org/go-pdf/fpdf"
)

// FacturXFileName is the name Factur-X 1.0 (ZUGFeRD 2.x) gives the CII
// embedded in the PDF.
const FacturXFileName = "factur-x.xml"

// srgb is the output intent's profile (icc/README.md: Debian's
// icc-profiles-free, zlib licence).
//
//go:embed icc/sRGB.icc
var srgb []byte

// FacturX draws d as Render does, as a PDF/A-3b with cii, d's UN/CEFACT
// CII D16B in the EN 16931 profile, embedded as factur-x.xml: the hybrid
// invoice of Factur-X 1.0 and ZUGFeRD 2.x. Same document and CII, same
// bytes.
//
// fpdf writes the PDF/A parts it knows (the XMP metadata with the
// Factur-X extension schema, the sRGB output intent, the embedded
// subset fonts). It cannot attach a file the way PDF/A-3 asks: its
// file specifications have no /AFRelationship, its embedded files no
// /Subtype or /ModDate, its name tree keys are "Attachement1", and it has
// no /AF on the catalog nor an /ID in the trailer. So the CII goes in an
// incremental update appended to fpdf's bytes (ISO 32000-1 §7.5.6): the
// embedded file, its file specification, and the catalog again with
// /AF and /EmbeddedFiles, under a trailer with /ID. fpdf's objects stay
// as they are.
func FacturX(d *Document, cii []byte) ([]byte, error) {
	r, err := draw(d)
	if err != nil {
		return nil, err
	}
	r.pdf.SetProducer(producer, false)
	meta, err := xmp(r.title(), r.d.Seller.Name, d.Created.UTC(), d.Modified.UTC())
	if err != nil {
		return nil, err
	}
	r.pdf.SetXmpMetadata(meta)
	r.pdf.AddOutputIntent(fpdf.OutputIntentType{
		SubtypeIdent: fpdf.OutputIntent_GTS_PDFA1, OutputConditionIdentifier: "sRGB IEC61966-2.1",
		Info: "sRGB IEC61966-2.1", ICCProfile: srgb,
	})
	base, err := r.output()
	if err != nil {
		return nil, err
	}
	return appendAttachment(base, cii, d.Modified.UTC())
}

// producer is the PDF's /Producer and the XMP's pdf:Producer, which
// PDF/A asks to agree.
const producer = "invoiced"

// pdfDate is how fpdf writes the Info dictionary's dates; XMP states the
// same instants in its own form, without a zone as fpdf writes none.
const (
	pdfDate = "20060102150405"
	xmpDate = "2006-01-02T15:04:05"
)

// xmp is the document's XMP packet: PDF/A-3b identification, what the
// Info dictionary says (title, author, tool, producer, dates), the
// Factur-X properties (an invoice, EN 16931 profile, its file name) and
// the PDF/A extension schema that declares them.
func xmp(title, author string, created, modified time.Time) ([]byte, error) {
	var b bytes.Buffer
	err := xmpTemplate.Execute(&b, map[string]string{
		"BOM": "\ufeff", "Title": esc(title), "Author": esc(author), "Producer": producer,
		"Created": created.Format(xmpDate), "Modified": modified.Format(xmpDate),
	})
	return b.Bytes(), err
}

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// appendAttachment appends to the PDF base the incremental update that
// embeds cii as factur-x.xml (see FacturX).
func appendAttachment(base, cii []byte, modified time.Time) ([]byte, error) {
	tr, err := lastTrailer(base)
	if err != nil {
		return nil, err
	}
	// fpdf 0.12 names the object before the catalog as /Info, which with
	// an output intent is the ICC profile's stream: the Info dictionary
	// is the object holding the dates it writes.
	if tr.info, err = infoObject(base); err != nil {
		return nil, err
	}
	catalog, err := object(base, tr.root)
	if err != nil {
		return nil, err
	}
	// fpdf writes /Names as the catalog's last entry.
	i := bytes.Index(catalog, []byte("/Names <<"))
	if i < 0 {
		return nil, errors.New("document: factur-x: the catalog has no /Names")
	}
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	if _, err := zw.Write(cii); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	sum := md5.Sum(cii)
	fileObj, specObj := tr.size, tr.size+1
	date := "D:" + modified.Format(pdfDate)

	out := bytes.NewBuffer(append([]byte(nil), base...))
	offsets := map[int]int{}
	obj := func(n int, body ...[]byte) {
		offsets[n] = out.Len()
		fmt.Fprintf(out, "%d 0 obj\n", n)
		for _, b := range body {
			out.Write(b)
		}
		out.WriteString("\nendobj\n")
	}
	obj(fileObj, fmt.Appendf(nil, "<< /Type /EmbeddedFile /Subtype /text#2Fxml /Filter /FlateDecode /Length %d /Params << /Size %d /ModDate (%s) /CheckSum <%x> >> >>\nstream\n",
		z.Len(), len(cii), date, sum), z.Bytes(), []byte("\nendstream"))
	obj(specObj, fmt.Appendf(nil, "<< /Type /Filespec /F (%[1]s) /UF (%[1]s) /Desc (Factur-X invoice, EN 16931) /AFRelationship /Alternative /EF << /F %[2]d 0 R /UF %[2]d 0 R >> >>",
		FacturXFileName, fileObj))
	obj(tr.root, catalog[:i], fmt.Appendf(nil, "/Names << /EmbeddedFiles << /Names [(%s) %d 0 R] >> >>\n/AF [%d 0 R]\n/Version /1.7\n>>",
		FacturXFileName, specObj, specObj))

	xref := out.Len()
	fmt.Fprintf(out, "xref\n0 1\n0000000000 65535 f \n%d 1\n%010d 00000 n \n%d 2\n%010d 00000 n \n%010d 00000 n \n",
		tr.root, offsets[tr.root], fileObj, offsets[fileObj], offsets[specObj])
	// PDF/A asks for a file identifier; the same bytes give the same one.
	id := md5.Sum(out.Bytes()[:xref])
	fmt.Fprintf(out, "trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R /Prev %d /ID [<%s> <%s>] >>\nstartxref\n%d\n%%%%EOF\n",
		specObj+1, tr.root, tr.info, tr.startxref, hex.EncodeToString(id[:]), hex.EncodeToString(id[:]), xref)
	return out.Bytes(), nil
}

var infoRE = regexp.MustCompile(`\n(\d+) 0 obj\n<<\n(?:/[A-Za-z]+ [^\n]*\n)*?/CreationDate \(D:`)

// infoObject is the number of the Info dictionary fpdf wrote.
func infoObject(pdf []byte) (int, error) {
	m := infoRE.FindSubmatch(pdf)
	if m == nil {
		return 0, errors.New("document: factur-x: no Info dictionary")
	}
	return strconv.Atoi(string(m[1]))
}

// trailer is what an update needs of the last one: the next object
// number, the catalog, the Info dictionary and where its xref starts.
type trailer struct {
	size, root, info, startxref int
}

var (
	trailerRE   = regexp.MustCompile(`(?s)trailer\s*<<(.*?)>>\s*startxref\s*(\d+)\s*%%EOF\s*$`)
	sizeRE      = regexp.MustCompile(`/Size (\d+)`)
	rootRE      = regexp.MustCompile(`/Root (\d+) 0 R`)
	errNoPDFTrl = errors.New("document: factur-x: no trailer with /Size and /Root at the end of the PDF")
)

func lastTrailer(pdf []byte) (trailer, error) {
	m := trailerRE.FindSubmatch(pdf)
	if m == nil {
		return trailer{}, errNoPDFTrl
	}
	var t trailer
	for _, f := range []struct {
		re *regexp.Regexp
		to *int
	}{{sizeRE, &t.size}, {rootRE, &t.root}} {
		sm := f.re.FindSubmatch(m[1])
		if sm == nil {
			return trailer{}, errNoPDFTrl
		}
		*f.to, _ = strconv.Atoi(string(sm[1]))
	}
	t.startxref, _ = strconv.Atoi(string(m[2]))
	return t, nil
}

// object returns the body of object n (between "n 0 obj" and "endobj"),
// trimmed; only for an object without a stream, as the catalog is.
func object(pdf []byte, n int) ([]byte, error) {
	start := bytes.LastIndex(pdf, fmt.Appendf(nil, "\n%d 0 obj\n", n))
	if start < 0 {
		return nil, fmt.Errorf("document: factur-x: no object %d", n)
	}
	body := pdf[start+len(fmt.Sprintf("\n%d 0 obj\n", n)):]
	end := bytes.Index(body, []byte("endobj"))
	if end < 0 {
		return nil, fmt.Errorf("document: factur-x: object %d does not end", n)
	}
	return bytes.TrimSpace(body[:end]), nil
}

// xmpTemplate is the XMP packet. Its values are escaped before; the
// packet is written uncompressed, as PDF/A readers expect to find it.
var xmpTemplate = template.Must(template.New("xmp").Parse(`<?xpacket begin="{{.BOM}}" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description rdf:about="" xmlns:pdfaid="http://www.aiim.org/pdfa/ns/id/">
<pdfaid:part>3</pdfaid:part>
<pdfaid:conformance>B</pdfaid:conformance>
</rdf:Description>
<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">
<dc:format>application/pdf</dc:format>
<dc:title><rdf:Alt><rdf:li xml:lang="x-default">{{.Title}}</rdf:li></rdf:Alt></dc:title>
<dc:creator><rdf:Seq><rdf:li>{{.Author}}</rdf:li></rdf:Seq></dc:creator>
</rdf:Description>
<rdf:Description rdf:about="" xmlns:pdf="http://ns.adobe.com/pdf/1.3/">
<pdf:Producer>{{.Producer}}</pdf:Producer>
</rdf:Description>
<rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/">
<xmp:CreatorTool>invoiced</xmp:CreatorTool>
<xmp:CreateDate>{{.Created}}</xmp:CreateDate>
<xmp:ModifyDate>{{.Modified}}</xmp:ModifyDate>
<xmp:MetadataDate>{{.Modified}}</xmp:MetadataDate>
</rdf:Description>
<rdf:Description rdf:about="" xmlns:fx="urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#">
<fx:DocumentType>INVOICE</fx:DocumentType>
<fx:DocumentFileName>factur-x.xml</fx:DocumentFileName>
<fx:Version>1.0</fx:Version>
<fx:ConformanceLevel>EN 16931</fx:ConformanceLevel>
</rdf:Description>
<rdf:Description rdf:about="" xmlns:pdfaExtension="http://www.aiim.org/pdfa/ns/extension/" xmlns:pdfaSchema="http://www.aiim.org/pdfa/ns/schema#" xmlns:pdfaProperty="http://www.aiim.org/pdfa/ns/property#">
<pdfaExtension:schemas>
<rdf:Bag>
<rdf:li rdf:parseType="Resource">
<pdfaSchema:schema>Factur-X PDFA Extension Schema</pdfaSchema:schema>
<pdfaSchema:namespaceURI>urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#</pdfaSchema:namespaceURI>
<pdfaSchema:prefix>fx</pdfaSchema:prefix>
<pdfaSchema:property>
<rdf:Seq>
<rdf:li rdf:parseType="Resource">
<pdfaProperty:name>DocumentFileName</pdfaProperty:name>
<pdfaProperty:valueType>Text</pdfaProperty:valueType>
<pdfaProperty:category>external</pdfaProperty:category>
<pdfaProperty:description>The name of the embedded XML document</pdfaProperty:description>
</rdf:li>
<rdf:li rdf:parseType="Resource">
<pdfaProperty:name>DocumentType</pdfaProperty:name>
<pdfaProperty:valueType>Text</pdfaProperty:valueType>
<pdfaProperty:category>external</pdfaProperty:category>
<pdfaProperty:description>The type of the hybrid document in capital letters, e.g. INVOICE or ORDER</pdfaProperty:description>
</rdf:li>
<rdf:li rdf:parseType="Resource">
<pdfaProperty:name>Version</pdfaProperty:name>
<pdfaProperty:valueType>Text</pdfaProperty:valueType>
<pdfaProperty:category>external</pdfaProperty:category>
<pdfaProperty:description>The actual version of the standard applying to the embedded XML document</pdfaProperty:description>
</rdf:li>
<rdf:li rdf:parseType="Resource">
<pdfaProperty:name>ConformanceLevel</pdfaProperty:name>
<pdfaProperty:valueType>Text</pdfaProperty:valueType>
<pdfaProperty:category>external</pdfaProperty:category>
<pdfaProperty:description>The conformance level of the embedded XML document</pdfaProperty:description>
</rdf:li>
</rdf:Seq>
</pdfaSchema:property>
</rdf:li>
</rdf:Bag>
</pdfaExtension:schemas>
</rdf:Description>
</rdf:RDF>
</x:xmpmeta>
<?xpacket end="w"?>`))
