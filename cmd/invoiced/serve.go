package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/migrations"
	"github.com/invoiced/invoiced/origins"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/gommon/bytes"
	"github.com/pressly/goose/v3"
)

// config is everything serve reads from the environment.
type config struct {
	DatabaseURL string
	HTTP        server.Config
	// MetricsAddr is where Prometheus metrics are served
	// (INVOICED_METRICS_ADDR); empty, they are not collected or served.
	MetricsAddr string
	MaxConns    int32
	App         app.Config
	// SellerSeed is the seller INVOICED_SELLER_* give, nil when none is
	// set: it seeds a database without a seller (sellerAtStart).
	SellerSeed *sellerSeed
	// NoSeller is a database without a seller (sellerAtStart).
	NoSeller bool
}

// checkAddr refuses an address that is not host:port or :port, naming
// the setting, before anything was set up.
func checkAddr(setting, addr string) error {
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		return fmt.Errorf("%s must be host:port or :port, not %q", setting, addr)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%s's port must be a number from 0 to 65535, not %q", setting, port)
	}
	return nil
}

// boolSetting reads a true/false setting; unset is false, anything
// strconv.ParseBool does not read is refused by name.
func boolSetting(e env, key string) (bool, error) {
	v := e.get(key, "")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s must be true or false, not %q", key, v)
	}
	return b, nil
}

var numberPrefixRE = regexp.MustCompile(`^[A-Z][A-Z0-9]{0,9}$`)

func loadConfig(e env) (config, error) {
	c := config{DatabaseURL: e.get("DATABASE_URL", ""), HTTP: server.DefaultConfig()}
	c.HTTP.Addr = e.get("INVOICED_ADDR", c.HTTP.Addr)
	if err := checkAddr("INVOICED_ADDR", c.HTTP.Addr); err != nil {
		return c, err
	}
	if c.MetricsAddr = e.get("INVOICED_METRICS_ADDR", ""); c.MetricsAddr != "" {
		if err := checkAddr("INVOICED_METRICS_ADDR", c.MetricsAddr); err != nil {
			return c, err
		}
		if c.MetricsAddr == c.HTTP.Addr {
			return c, fmt.Errorf("INVOICED_METRICS_ADDR must differ from INVOICED_ADDR (%q): metrics are never served on the API port", c.HTTP.Addr)
		}
	}
	if v := e.get("INVOICED_LOG_LEVEL", ""); v != "" {
		var l slog.Level
		if err := l.UnmarshalText([]byte(v)); err != nil {
			return c, fmt.Errorf("INVOICED_LOG_LEVEL must be debug, info, warn or error, not %q", v)
		}
	}
	c.HTTP.BodyLimit = e.get("INVOICED_BODY_LIMIT", c.HTTP.BodyLimit)
	// Echo panics on a limit it cannot parse; refuse it here, by name.
	if n, err := bytes.Parse(c.HTTP.BodyLimit); err != nil || n < 1 {
		return c, fmt.Errorf("INVOICED_BODY_LIMIT must be a size such as 1M or 512K, not %q", c.HTTP.BodyLimit)
	}
	var err error
	if c.HTTP.TrustProxyHeaders, err = boolSetting(e, "INVOICED_TRUST_PROXY_HEADERS"); err != nil {
		return c, err
	}
	if c.App.SecureCookies, err = boolSetting(e, "INVOICED_SECURE_COOKIES"); err != nil {
		return c, err
	}
	if c.App.AllowedOrigins, err = origins.Parse(e.get(origins.Setting, "")); err != nil {
		return c, fmt.Errorf("%s: %w", origins.Setting, err)
	}
	c.App.Version = version
	if v := e.get("INVOICED_DB_MAX_CONNS", ""); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 {
			return c, fmt.Errorf("INVOICED_DB_MAX_CONNS must be a positive integer, not %q", v)
		}
		c.MaxConns = int32(n)
		if store.URLSetsMaxConns(c.DatabaseURL) {
			return c, errors.New("INVOICED_DB_MAX_CONNS and DATABASE_URL's pool_max_conns both size the pool; set one")
		}
	}
	if err := invoiceSettings(e, &c.App.Invoices); err != nil {
		return c, err
	}
	if err := approvalSettings(e, &c.App.Approvals); err != nil {
		return c, err
	}
	if c.App.Notify, err = notifySettings(e); err != nil {
		return c, err
	}
	// Tokens of the OAuth server are issued by, and for, the address
	// clients reach; without the setting each request's host says it.
	c.App.OAuth.PublicURL = e.get("INVOICED_PUBLIC_URL", "")
	if c.App.Webhooks, err = webhookSettings(e); err != nil {
		return c, err
	}
	if c.SellerSeed, err = sellerSettings(e); err != nil {
		return c, err
	}
	if c.App.Chat, err = steploop.LimitsFromSettings(func(k string) string { return e.get(k, "") }); err != nil {
		return c, err
	}
	m, err := model.FromSettings(func(k string) string { return e.get(k, "") })
	switch {
	case errors.Is(err, model.ErrNotConfigured):
		// Everything but /v1/chat works; it answers 503 naming the settings.
	case err != nil:
		return c, err
	default:
		c.App.Model = m
	}
	return c, nil
}

// invoiceSettings reads the number series' prefixes and the business time
// zone into cfg. The zone comes from the binary's own tz database
// (time/tzdata, imported by main): the image is FROM scratch.
func invoiceSettings(e env, cfg *invoices.Config) error {
	for _, s := range []struct {
		key string
		dst *string
	}{{"INVOICED_NUMBER_PREFIX", &cfg.NumberPrefix}, {"INVOICED_CREDIT_NOTE_PREFIX", &cfg.CreditNotePrefix}} {
		if v := e.get(s.key, ""); v != "" {
			if !numberPrefixRE.MatchString(v) {
				return fmt.Errorf("%s must be 1–10 capital letters or digits starting with a letter, not %q", s.key, v)
			}
			*s.dst = v
		}
	}
	inv, cn := e.get("INVOICED_NUMBER_PREFIX", invoices.DefaultNumberPrefix), e.get("INVOICED_CREDIT_NOTE_PREFIX", invoices.DefaultCreditNotePrefix)
	if inv == cn {
		return fmt.Errorf("INVOICED_CREDIT_NOTE_PREFIX and INVOICED_NUMBER_PREFIX are both %q: an invoice and a credit note would share numbers such as %s-2026-000001", inv, inv)
	}
	tz := e.get("INVOICED_BUSINESS_TIMEZONE", "UTC")
	loc, err := time.LoadLocation(tz)
	if err != nil || tz == "Local" {
		return fmt.Errorf("INVOICED_BUSINESS_TIMEZONE must be an IANA time zone such as Europe/Berlin or UTC, not %q", tz)
	}
	cfg.BusinessTimeZone = loc
	return nil
}

// approvalSettings reads the INVOICED_APPROVAL_*_TTL settings into p;
// unset ones leave p's defaults.
func approvalSettings(e env, p *approvals.Policy) error {
	for _, d := range []struct {
		key string
		dst *time.Duration
	}{{"INVOICED_APPROVAL_PENDING_TTL", &p.PendingTTL}, {"INVOICED_APPROVAL_APPROVED_TTL", &p.ApprovedTTL}} {
		if v := e.get(d.key, ""); v != "" {
			dur, err := time.ParseDuration(v)
			if err != nil || dur <= 0 {
				return fmt.Errorf("%s must be a positive duration such as 72h, not %q", d.key, v)
			}
			*d.dst = dur
		}
	}
	// How many approvers a request needs is data that admins own (ADR-0014);
	// serve refuses the quorum settings rather than start with a policy
	// other than the one whoever set them meant.
	for _, key := range []string{"INVOICED_APPROVAL_QUORUM_THRESHOLD", "INVOICED_APPROVAL_QUORUM"} {
		if e.get(key, "") != "" {
			return fmt.Errorf("%s is not a setting: how many approvers a request needs is the approval policy in the database, "+
				"which an admin reads with `invoiced policy list` and changes with `invoiced policy set` (docs/approvals.md); unset %s", key, key)
		}
	}
	return nil
}

// defaultGCPercent is serve's garbage-collection target when GOGC is not
// set. The live heap is small (about 10 MiB under 32 concurrent chats), so
// at Go's 100 the collector ran every few milliseconds; at 400 `make
// bench-chat` serves 10–13 % more chats per second for about 12 MiB more
// peak RSS (44 → 56 MiB). Set GOGC to choose otherwise.
const defaultGCPercent = 400

// gcDefault applies defaultGCPercent unless the environment sets GOGC (the
// runtime has applied that one already).
func gcDefault(e env) {
	if _, set := e["GOGC"]; !set {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// shutdownGrace is how long in-flight requests get to finish once a
// signal asks serve to stop (docs/operating.md, "Health and shutdown").
const shutdownGrace = 20 * time.Second

// cmdServe runs the HTTP API: the settings, the schema check, the side
// listeners (metrics, pprof), the service, then the listener until ctx
// ends.
func cmdServe(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("serve [--migrate]",
		"Run the HTTP API on INVOICED_ADDR (default :8080) against DATABASE_URL.\n"+
			"Refuses to start while the schema is behind unless --migrate is given.", stderr)
	migrate := fs.Bool("migrate", false, "apply pending migrations before serving")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(e)
	if err != nil {
		return err
	}
	log := newLogger(e, stdout)
	gcDefault(e)
	l, err := listen("INVOICED_ADDR", cfg.HTTP.Addr)
	if err != nil {
		return err
	}
	defer l.Close() // Serve closes it; this is for a return before Serve

	sch, err := openSchema(ctx, cfg.DatabaseURL, *migrate, log)
	if err != nil {
		return err
	}
	defer sch.close()
	pool, err := store.Open(ctx, store.PoolConfig{URL: cfg.DatabaseURL, MaxConns: cfg.MaxConns})
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := sellerAtStart(ctx, pool, &cfg, log); err != nil {
		return err
	}
	logWhatIsOff(cfg, log)

	stopSides, err := serveSides(e, &cfg, pool, log)
	if err != nil {
		return err
	}
	defer stopSides()
	srv := server.New(cfg.HTTP, log, sch.ready(pool))
	a, err := app.New(ctx, cfg.App, pool, log)
	if err != nil {
		return err
	}
	defer a.Close()
	if cfg.HTTP.Metrics != nil {
		cfg.HTTP.Metrics.Registry.MustRegister(a.Collectors()...)
	}
	a.Routes(srv)

	log.Info("serving", "addr", l.Addr().String(), "schema_version", sch.latest, "version", version)
	if err := server.Serve(ctx, srv, l, shutdownGrace); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// schema is the migrations' view of the database serve runs on: kept
// open so that readiness can ask whether the schema is still current.
type schema struct {
	db     *sql.DB
	prov   *goose.Provider
	latest int64
}

// openSchema applies pending migrations if migrate is set, then refuses a
// schema that is behind this binary, naming the command that fixes it.
func openSchema(ctx context.Context, url string, migrate bool, log *slog.Logger) (*schema, error) {
	db, err := migrations.Open(url)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(2)
	sch := &schema{db: db}
	if sch.prov, err = migrations.NewProvider(db, log); err != nil {
		sch.close()
		return nil, err
	}
	if migrate {
		applied, err := sch.prov.Up(ctx)
		for _, r := range applied {
			log.Info("migration applied", "migration", filepath.Base(r.Source.Path), "duration", r.Duration)
		}
		if err != nil {
			sch.close()
			return nil, fmt.Errorf("migrate up: %w", err)
		}
	}
	current, latest, behind, err := migrations.Behind(ctx, sch.prov)
	if err != nil {
		sch.close()
		return nil, fmt.Errorf("cannot read the schema version (is DATABASE_URL right?): %w", err)
	}
	if behind {
		sch.close()
		return nil, fmt.Errorf("the database schema is at version %d but this binary needs %d: run `invoiced migrate up` (or start with `invoiced serve --migrate`)", current, latest)
	}
	sch.latest = latest
	return sch, nil
}

func (s *schema) close() { _ = s.db.Close() }

// ready is /readyz's check: the database answers and takes writes (a
// standby after a failover, or a database set read-only, answers every
// write 503, so a load balancer should send nothing there), and the
// schema is still current (another replica's binary may have migrated
// past it).
func (s *schema) ready(pool *pgxpool.Pool) func(context.Context) error {
	return func(ctx context.Context) error {
		var readOnly bool
		if err := pool.QueryRow(ctx, `SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on'`).Scan(&readOnly); err != nil {
			return errors.New("the database does not answer")
		}
		if readOnly {
			return errors.New("the database is read-only")
		}
		_, _, behind, err := migrations.Behind(ctx, s.prov)
		switch {
		case err != nil:
			return errors.New("the database schema's version cannot be read")
		case behind:
			return errors.New("the database schema is behind this binary (rolled back or restored since serve started): run `invoiced migrate up`")
		}
		return nil
	}
}

// serveSides starts the listeners beside the API's: Prometheus metrics
// on INVOICED_METRICS_ADDR (setting cfg.HTTP.Metrics, so the API records
// into them) and pprof on INVOICED_PPROF_ADDR, each only when set. The
// func returned stops them.
func serveSides(e env, cfg *config, pool *pgxpool.Pool, log *slog.Logger) (func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if cfg.MetricsAddr != "" {
		metrics := server.NewMetrics()
		metrics.RegisterPool(pool)
		metrics.Registry.MustRegister(steploop.TokensTotal)
		cfg.HTTP.Metrics = metrics
		s, err := serveSide("INVOICED_METRICS_ADDR", cfg.MetricsAddr, metrics.Handler(), log)
		if err != nil {
			return nil, err
		}
		stops = append(stops, s)
	}
	if addr := e.get("INVOICED_PPROF_ADDR", ""); addr != "" {
		s, err := servePprof(addr, log)
		if err != nil {
			stop()
			return nil, err
		}
		stops = append(stops, s)
	}
	return stop, nil
}
