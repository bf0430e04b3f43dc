package mcp_test

import (
	"os"
	"testing"

	"github.com/invoiced/invoiced/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }
