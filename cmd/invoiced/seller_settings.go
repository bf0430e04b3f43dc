package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/seller"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sellerKeys are the settings that seed the seller on a database without
// one.
var sellerKeys = []string{"INVOICED_SELLER_NAME", "INVOICED_SELLER_ADDRESS", "INVOICED_SELLER_TAX_ID"}

// sellerSeed is the seller as INVOICED_SELLER_* give it.
type sellerSeed struct {
	details seller.Details
	// settings are the keys set, in sellerKeys' order.
	settings []string
}

// sellerSettings reads the seller INVOICED_SELLER_* give, nil when none
// is set. The name is the legal name; the address is its street lines
// (newlines, or the two characters \n for an env file that cannot hold a
// newline; at most 3, for the postcode, city and country are fields of
// their own that `invoiced seller set` fills); the tax id is the VAT
// identifier when it reads as one, else the national tax number. A value
// the seller cannot hold is refused naming the setting.
func sellerSettings(e env) (*sellerSeed, error) {
	seed := &sellerSeed{}
	for _, k := range sellerKeys {
		if strings.TrimSpace(e.get(k, "")) != "" {
			seed.settings = append(seed.settings, k)
		}
	}
	if len(seed.settings) == 0 {
		return nil, nil
	}
	d := &seed.details
	if d.LegalName = e.get("INVOICED_SELLER_NAME", ""); strings.TrimSpace(d.LegalName) == "" {
		return nil, fmt.Errorf("INVOICED_SELLER_NAME is required with %s: the seller's legal name, to seed the seller "+
			"(or unset them and set the seller with `invoiced seller set`)", strings.Join(seed.settings, " and "))
	}
	address := strings.ReplaceAll(strings.ReplaceAll(e.get("INVOICED_SELLER_ADDRESS", ""), `\n`, "\n"), "\r\n", "\n")
	for _, l := range strings.Split(address, "\n") {
		if strings.TrimSpace(l) != "" {
			d.Address.Lines = append(d.Address.Lines, l)
		}
	}
	if n := len(d.Address.Lines); n > party.MaxLines {
		return nil, fmt.Errorf("INVOICED_SELLER_ADDRESS has %d lines, and the seller's address holds %d street lines besides its postcode, "+
			"city and country: unset it and set the seller's address with `invoiced seller set` (docs/documents.md)", n, party.MaxLines)
	}
	if taxID := strings.TrimSpace(e.get("INVOICED_SELLER_TAX_ID", "")); taxID != "" {
		if v, err := party.ParseVATID("vat_id", taxID); err == nil {
			d.VATID = v
		} else {
			d.TaxNumber = taxID
		}
	}
	checked, err := seed.details.Check()
	if err != nil {
		return nil, settingError(err)
	}
	seed.details = checked
	return seed, nil
}

// settingError names the setting behind each field the seller refused.
func settingError(err error) error {
	p, ok := problem.As(err)
	if !ok {
		return err
	}
	var parts []string
	for _, f := range p.Errors {
		key := "INVOICED_SELLER_TAX_ID"
		switch {
		case f.Field == "legal_name":
			key = "INVOICED_SELLER_NAME"
		case strings.HasPrefix(f.Field, "address"):
			key = "INVOICED_SELLER_ADDRESS"
		}
		parts = append(parts, fmt.Sprintf("%s (the seller's %s) %s", key, f.Field, f.Message))
	}
	return fmt.Errorf("%s", strings.Join(parts, "; "))
}

// sellerAtStart seeds the seller from INVOICED_SELLER_* on a database
// without one, in one audited transaction; once there is one, serve
// refuses to start while they are set, since they would no longer say
// who issues the invoices. It notes in cfg whether there is a seller, for
// the start-up line; documents read it live, when they are rendered.
func sellerAtStart(ctx context.Context, pool *pgxpool.Pool, cfg *config, log *slog.Logger) error {
	if seed := cfg.SellerSeed; seed != nil {
		s, seeded, err := seller.NewService(pool, nil).Seed(ctx, seed.details, seed.settings)
		if err != nil {
			return err
		}
		if !seeded {
			verb := "is"
			if len(seed.settings) > 1 {
				verb = "are"
			}
			return fmt.Errorf("%s %s set, but the seller is data in the database (version %d): read it with `invoiced seller show`, "+
				"change it with `invoiced seller set`, and unset %s", strings.Join(seed.settings, " and "), verb, s.Version, strings.Join(seed.settings, ", "))
		}
		log.Info("the seller was seeded from "+strings.Join(seed.settings, ", ")+": it is data now; read it with `invoiced seller show`, "+
			"change it with `invoiced seller set`, and unset the settings (serve refuses to start while they are set)",
			"settings", seed.settings, "vat_id", string(s.VATID), "tax_number", s.TaxNumber)
	}
	s, err := seller.Get(ctx, pool)
	if err != nil {
		return err
	}
	cfg.NoSeller = s == nil
	return nil
}
