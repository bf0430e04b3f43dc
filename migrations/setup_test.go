package migrations_test

import (
	"database/sql"
	"testing"

	"github.com/invoiced/invoiced/migrations"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"
)

// bundle is a test's own migrated database: its URL, the database/sql
// handle goose runs on, and the provider over it.
type bundle struct {
	url string
	db  *sql.DB
	p   *goose.Provider
}

func setup(t *testing.T) bundle {
	t.Helper()
	url := storetest.URL(t)
	db, err := migrations.Open(url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	p, err := migrations.NewProvider(db, nil)
	require.NoError(t, err)
	return bundle{url: url, db: db, p: p}
}
