package main

import (
	"context"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

// docs/operating.md: "All settings come from the environment; `invoiced serve` refuses
// a bad value at start, naming the variable." The database URL points
// nowhere, so only a refusal of the setting itself can name it.
func TestServeRefusesBadBooleanAndLogLevelSettings(t *testing.T) {
	t.Parallel()
	for key, val := range map[string]string{
		"INVOICED_LOG_LEVEL":           "verbose",
		"INVOICED_TRUST_PROXY_HEADERS": "yes",
		"INVOICED_SECURE_COOKIES":      "sometimes",
	} {
		t.Run(key, func(t *testing.T) {
			r := invoke(context.Background(), env{key: val, "DATABASE_URL": "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=2"}, "serve")
			require.Equal(t, 1, r.code, key)
			require.Contains(t, r.stderr, key, "serve must refuse %s=%q naming it", key, val)
		})
	}
}

// A port out of range is refused by name at start, not by a net error
// after the database and the app were set up.
func TestServeRefusesBadAddrPortNamingIt(t *testing.T) {
	t.Parallel()
	e := env{"DATABASE_URL": storetest.URL(t), "INVOICED_ADDR": "127.0.0.1:99999"}
	r := invoke(context.Background(), e, "serve")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "INVOICED_ADDR")
}

// serve collects garbage at 400 % unless GOGC says otherwise. Not
// parallel: the GC target is the process's.
func TestServeGCTargetDefaultsTo400UnlessGOGCIsSet(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	gcDefault(env{})
	require.Equal(t, 400, debug.SetGCPercent(100))
	gcDefault(env{"GOGC": "150"})
	require.Equal(t, 100, debug.SetGCPercent(100), "an operator's GOGC is left as the runtime applied it")
}

// The quorum settings are refused by name, pointing at the approval
// policy that replaced them, rather than silently ignored: whoever set
// one meant a policy the database may not hold.
func TestServeRefusesTheQuorumSettingsPointingAtThePolicy(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"INVOICED_APPROVAL_QUORUM_THRESHOLD", "INVOICED_APPROVAL_QUORUM"} {
		t.Run(key, func(t *testing.T) {
			r := invoke(context.Background(), env{key: "2", "DATABASE_URL": "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=2"}, "serve")
			require.Equal(t, 1, r.code)
			require.Contains(t, r.stderr, key)
			require.Contains(t, r.stderr, "invoiced policy set")
		})
	}
}

// INVOICED_SELLER_* give the seller that seeds a database without one:
// the name is the legal name, the address its street lines (newlines, or
// \n in an env file), the tax id the VAT identifier when it reads as one,
// else the tax number. A value the seller cannot hold is refused naming
// the setting.
func TestSellerSettings(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"Hauptstraße 5\n10115 Berlin", `Hauptstraße 5\n10115 Berlin`, "Hauptstraße 5\r\n\n10115 Berlin\n"} {
		c, err := loadConfig(env{"INVOICED_SELLER_NAME": " Nordlicht GmbH ", "INVOICED_SELLER_ADDRESS": addr, "INVOICED_SELLER_TAX_ID": "de 136 308 783"})
		require.NoError(t, err)
		require.Equal(t, []string{"INVOICED_SELLER_NAME", "INVOICED_SELLER_ADDRESS", "INVOICED_SELLER_TAX_ID"}, c.SellerSeed.settings)
		d := c.SellerSeed.details
		require.Equal(t, "Nordlicht GmbH", d.LegalName)
		require.Equal(t, []string{"Hauptstraße 5", "10115 Berlin"}, d.Address.Lines, "%q", addr)
		require.Equal(t, party.VATID("DE136308783"), d.VATID)
		require.Empty(t, d.TaxNumber)
	}
	c, err := loadConfig(env{"INVOICED_SELLER_NAME": "Nordlicht GmbH", "INVOICED_SELLER_TAX_ID": "37/123/45678"})
	require.NoError(t, err)
	require.Equal(t, "37/123/45678", c.SellerSeed.details.TaxNumber, "not a VAT identifier: the tax number")
	require.Empty(t, c.SellerSeed.details.VATID)
	c, err = loadConfig(env{})
	require.NoError(t, err)
	require.Nil(t, c.SellerSeed, "unset: nothing to seed")
	for key, val := range map[string]string{
		"INVOICED_SELLER_NAME":    "Nordlicht\nGmbH",
		"INVOICED_SELLER_ADDRESS": "Hauptstraße 5\t10115 Berlin",
		"INVOICED_SELLER_TAX_ID":  "DE\x00123",
	} {
		_, err := loadConfig(env{"INVOICED_SELLER_NAME": "Nordlicht GmbH", key: val})
		require.ErrorContains(t, err, key, "%q", val)
	}
	_, err = loadConfig(env{"INVOICED_SELLER_NAME": strings.Repeat("x", 201)})
	require.ErrorContains(t, err, "INVOICED_SELLER_NAME (the seller's legal_name) must be at most 200 characters")
	_, err = loadConfig(env{"INVOICED_SELLER_NAME": "N", "INVOICED_SELLER_TAX_ID": "\xff"})
	require.ErrorContains(t, err, "INVOICED_SELLER_TAX_ID")
	_, err = loadConfig(env{"INVOICED_SELLER_ADDRESS": "Hauptstraße 5"})
	require.ErrorContains(t, err, "INVOICED_SELLER_NAME is required with INVOICED_SELLER_ADDRESS")
	_, err = loadConfig(env{"INVOICED_SELLER_NAME": "N", "INVOICED_SELLER_ADDRESS": `1\n2\n3\n4`})
	require.ErrorContains(t, err, "INVOICED_SELLER_ADDRESS has 4 lines")
}

// The business time zone comes from the binary's own tz database (the
// image has none); a name it does not know, and a credit note prefix that
// would make credit notes and invoices share numbers, are refused by name.
func TestInvoiceSettings(t *testing.T) {
	t.Parallel()
	c, err := loadConfig(env{"INVOICED_BUSINESS_TIMEZONE": "Europe/Berlin", "INVOICED_CREDIT_NOTE_PREFIX": "GS"})
	require.NoError(t, err)
	require.Equal(t, "Europe/Berlin", c.App.Invoices.BusinessTimeZone.String())
	require.Equal(t, "GS", c.App.Invoices.CreditNotePrefix)
	c, err = loadConfig(env{})
	require.NoError(t, err)
	require.Equal(t, "UTC", c.App.Invoices.BusinessTimeZone.String())
	for key, val := range map[string]string{
		"INVOICED_BUSINESS_TIMEZONE":  "Mars/Olympus",
		"INVOICED_CREDIT_NOTE_PREFIX": "cn",
	} {
		_, err := loadConfig(env{key: val})
		require.ErrorContains(t, err, key)
	}
	_, err = loadConfig(env{"INVOICED_BUSINESS_TIMEZONE": "Local"})
	require.ErrorContains(t, err, "INVOICED_BUSINESS_TIMEZONE")
	_, err = loadConfig(env{"INVOICED_CREDIT_NOTE_PREFIX": "INV"})
	require.ErrorContains(t, err, "INVOICED_CREDIT_NOTE_PREFIX")
	_, err = loadConfig(env{"INVOICED_NUMBER_PREFIX": "CN"})
	require.ErrorContains(t, err, "INVOICED_NUMBER_PREFIX")
}
