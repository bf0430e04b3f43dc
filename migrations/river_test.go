package migrations_test

import (
	"context"
	"io/fs"
	"testing"

	"github.com/invoiced/invoiced/migrations"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/stretchr/testify/require"
)

// Every migration of the River version this module links is embedded as
// the goose file rivergen renders from River's bundled SQL, unedited: a
// River upgrade with a new migration, or a hand edit, fails here until
// `go generate ./migrations` is run.
func TestRiverMigrationsAreRiversBundledSQL(t *testing.T) {
	t.Parallel()
	want, err := migrations.RiverFiles()
	require.NoError(t, err)
	m, err := rivermigrate.New(riverpgxv5.New(nil), nil)
	require.NoError(t, err)
	require.Len(t, want, len(m.AllVersions()))
	for _, f := range want {
		got, err := fs.ReadFile(migrations.FS(), f.Name)
		require.NoError(t, err, "River migration %s is not embedded: run go generate ./migrations", f.Name)
		require.Equal(t, f.Content, string(got), "%s differs from River's bundled SQL: run go generate ./migrations", f.Name)
	}
	rivers, err := fs.Glob(migrations.FS(), "*_river_*.sql")
	require.NoError(t, err)
	require.Len(t, rivers, len(want), "an embedded River file that River does not bundle")
}

// After goose's up, River's own migrator finds its schema complete and
// valid, so River's client, CLI and UI agree with goose on the version.
func TestRiverSeesItsSchemaCompleteAfterGooseUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, storetest.URL(t))
	require.NoError(t, err)
	defer pool.Close()
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	require.NoError(t, err)
	res, err := m.Validate(ctx, nil)
	require.NoError(t, err)
	require.True(t, res.OK, "%v", res.Messages)
	existing, err := m.ExistingVersions(ctx)
	require.NoError(t, err)
	require.Len(t, existing, len(m.AllVersions()))
}
