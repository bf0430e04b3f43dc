// Command gen writes the vat package's vatex.txt (go generate ./vat): the
// VAT exemption reason codes EN 16931 accepts, read from rule BR-CL-22 of
// the CEN validation artefacts (internal/en16931 finds them).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/invoiced/invoiced/internal/en16931"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "vat/internal/gen:", err)
		os.Exit(1)
	}
}

func run() error {
	dir, err := en16931.Dir()
	if err != nil {
		return err
	}
	codes, err := en16931.CodeList(filepath.Join(dir, en16931.UBL), "BR-CL-22")
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(`# The VAT exemption reason codes EN 16931 accepts (the CEF VATEX code
# list), as rule BR-CL-22 of the CEN validation artefacts
# (ubl/EN16931-UBL-validation.xslt) lists them. Written by go generate
# ./vat; the vat tests fail when it and the artefacts differ.
`)
	for _, c := range codes {
		b.WriteString(c + "\n")
	}
	// go generate runs in the directory of the file that asks for it.
	return os.WriteFile("vatex.txt", []byte(b.String()), 0o644) //nolint:gosec // a source file
}
