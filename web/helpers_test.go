package web_test

import (
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/web"
)

func appConfig(cfg web.Config) app.Config { return app.Config{Web: &cfg} }
