package en16931_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/invoiced/invoiced/internal/en16931"
	"github.com/stretchr/testify/require"
)

func TestCodeListReadsARulesList(t *testing.T) {
	t.Parallel()
	dir, err := en16931.Dir()
	require.NoError(t, err)
	for _, tc := range []struct {
		rule      string
		has       []string
		hasNot    []string
		atLeast   int
		firstCode string
	}{
		{"BR-CL-23", []string{"HUR", "C62", "XPP", "LS"}, []string{"PCE", "hur"}, 2000, "10"},
		{"BR-CL-22", []string{"VATEX-EU-AE", "VATEX-EU-IC", "VATEX-EU-132-1A"}, []string{"VATEX-EU-S"}, 50, "VATEX-EU-132"},
	} {
		ubl, err := en16931.CodeList(filepath.Join(dir, en16931.UBL), tc.rule)
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(ubl), tc.atLeast, tc.rule)
		require.Equal(t, tc.firstCode, ubl[0], "sorted")
		require.Subset(t, ubl, tc.has)
		for _, c := range tc.hasNot {
			require.NotContains(t, ubl, c)
		}
		cii, err := en16931.CodeList(filepath.Join(dir, en16931.CII), tc.rule)
		require.NoError(t, err)
		require.Equal(t, ubl, cii, "%s: UBL and CII accept the same codes", tc.rule)
	}
}

func TestCodeListRefusesAnUnknownRule(t *testing.T) {
	t.Parallel()
	dir, err := en16931.Dir()
	require.NoError(t, err)
	_, err = en16931.CodeList(filepath.Join(dir, en16931.UBL), "BR-CL-99")
	require.ErrorContains(t, err, "no assertion with id BR-CL-99")
}

// Not parallel: it sets the environment.
func TestDirNamesTheSettingWhenTheArtefactsAreMissing(t *testing.T) {
	t.Setenv(en16931.DirEnv, filepath.Join(t.TempDir(), "nowhere"))
	_, err := en16931.Dir()
	require.ErrorContains(t, err, en16931.DirEnv)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestDriftNamesTheCodesThatMoved(t *testing.T) {
	t.Parallel()
	missing, extra := en16931.Drift([]string{"C62", "HUR", "KGM"}, []string{"KGM", "PCE", "C62"})
	require.Equal(t, []string{"HUR"}, missing)
	require.Equal(t, []string{"PCE"}, extra)
	missing, extra = en16931.Drift([]string{"A", "B"}, []string{"B", "A"})
	require.Empty(t, missing)
	require.Empty(t, extra)
}
