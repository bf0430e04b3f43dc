// Command rivergen writes River's migrations as goose files into the
// migrations directory (go generate ./migrations). A River upgrade that
// adds a migration fails migrations' drift test until this is run.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/invoiced/invoiced/migrations"
)

func main() {
	files, err := migrations.RiverFiles()
	if err != nil {
		fmt.Fprintln(os.Stderr, "rivergen:", err)
		os.Exit(1)
	}
	for _, f := range files {
		// go generate runs in the directory of the file that asks for it.
		if err := os.WriteFile(filepath.Join(".", f.Name), []byte(f.Content), 0o644); err != nil { //nolint:gosec // migrations are source files
			fmt.Fprintln(os.Stderr, "rivergen:", err)
			os.Exit(1)
		}
	}
}
