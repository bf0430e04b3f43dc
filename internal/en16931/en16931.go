// Package en16931 reads code lists out of the CEN's EN 16931 validation
// artefacts (shared/en16931, release validation-1.3.16), so that the
// packages embedding a list (units, vat) are generated from, and tested
// against, the rules an e-invoice is judged by rather than a copy typed by
// hand. It is for generators and tests; nothing at run time reads the
// artefacts.
package en16931

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DirEnv names the setting that points at the artefacts' folder.
const DirEnv = "INVOICED_EN16931_DIR"

// UBL and CII are the artefacts' business rules for each syntax, relative
// to Dir. Both carry the same code lists.
const (
	UBL = "ubl/EN16931-UBL-validation.xslt"
	CII = "cii/EN16931-CII-validation.xslt"
)

// Dir returns the artefacts' folder: DirEnv when set (a relative path is
// taken from the repository's root), else ../shared/en16931 beside the
// repository, where the project's machines and CI keep shared/. It fails,
// naming DirEnv, when the folder holds no UBL rules.
func Dir() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	dir := os.Getenv(DirEnv)
	if dir == "" {
		dir = filepath.Join("..", "shared", "en16931")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, UBL)); err != nil {
		return "", fmt.Errorf("the EN 16931 validation artefacts are not at %s (%w): set %s to the folder holding %s", dir, err, DirEnv, UBL)
	}
	return dir, nil
}

// repoRoot walks up from the working directory (a package's folder, under
// go test and go generate) to the folder holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// CodeList returns, sorted, the codes that rule (such as "BR-CL-23")
// accepts in the rules file at path: the space-separated list of the
// `contains(' … ', …)` test of the assertion that rule identifies.
func CodeList(path, rule string) ([]string, error) {
	src, err := os.ReadFile(path) //nolint:gosec // a path the caller chose
	if err != nil {
		return nil, err
	}
	test, err := assertion(src, rule)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	const open = "contains(' "
	i := strings.Index(test, open)
	if i < 0 {
		return nil, fmt.Errorf("%s: the test of %s has no code list: %.120s", path, rule, test)
	}
	list, _, ok := strings.Cut(test[i+len(open):], "'")
	if !ok {
		return nil, fmt.Errorf("%s: the code list of %s does not end", path, rule)
	}
	codes := strings.Fields(list)
	slices.Sort(codes)
	if len(codes) == 0 || len(slices.Compact(slices.Clone(codes))) != len(codes) {
		return nil, fmt.Errorf("%s: the code list of %s is empty or repeats a code", path, rule)
	}
	return codes, nil
}

// assertion returns the test attribute of the one svrl:failed-assert
// whose id attribute is rule. The compiled Schematron writes each as
//
//	<svrl:failed-assert test="…"> <xsl:attribute name="id">BR-CL-23</xsl:attribute> …
func assertion(src []byte, rule string) (string, error) {
	dec := xml.NewDecoder(bytes.NewReader(src))
	var (
		test, found string
		inID        bool
		n           int
	)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch {
			case t.Name.Local == "failed-assert":
				test = attr(t, "test")
			case t.Name.Local == "attribute" && attr(t, "name") == "id":
				inID = true
			}
		case xml.CharData:
			if inID && strings.TrimSpace(string(t)) == rule {
				found = test
				n++
			}
		case xml.EndElement:
			inID = false
		}
	}
	switch {
	case n == 0:
		return "", fmt.Errorf("no assertion with id %s", rule)
	case n > 1:
		return "", fmt.Errorf("%d assertions with id %s", n, rule)
	}
	return found, nil
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// Drift returns the codes of the artefacts' list (want) that an embedded
// list (got) lacks, and those it has beyond it, both sorted, so that a
// drift test names the few codes that moved rather than both lists.
func Drift(want, got []string) (missing, extra []string) {
	in := func(list []string) map[string]bool {
		m := make(map[string]bool, len(list))
		for _, c := range list {
			m[c] = true
		}
		return m
	}
	w, g := in(want), in(got)
	for c := range w {
		if !g[c] {
			missing = append(missing, c)
		}
	}
	for c := range g {
		if !w[c] {
			extra = append(extra, c)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return missing, extra
}
