package server_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

type failingBody struct{ err error }

func (f failingBody) Read([]byte) (int, error) { return 0, f.err }

// A body that cannot be read (the client hung up, or stalled past the read
// timeout) is the client's 400, not a 500; the body limit stays a 413.
func TestReadBodyFailuresAreTheClients(t *testing.T) {
	t.Parallel()
	e := echo.New()
	read := func(body io.Reader) error {
		req := httptest.NewRequest(http.MethodPost, "/", body)
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		c := e.NewContext(req, httptest.NewRecorder())
		_, err := server.ReadBody(c)
		return err
	}
	for _, cause := range []error{io.ErrUnexpectedEOF, errors.New("read tcp: i/o timeout")} {
		p, ok := problem.As(read(failingBody{cause}))
		require.True(t, ok, "typed problem for %v", cause)
		require.Equal(t, http.StatusBadRequest, p.Status)
		require.Equal(t, problem.CodeBadRequest, p.Code)
		require.NotContains(t, p.Detail, cause.Error(), "the cause is logged, not sent")
	}
	limited := http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(strings.NewReader("0123456789")), 4)
	var mbe *http.MaxBytesError
	require.ErrorAs(t, read(limited), &mbe, "the body limit's error passes through to become 413")
	require.NoError(t, read(strings.NewReader(`{"ok":true}`)))
}
