package model

import (
	"errors"
	"fmt"
	"time"
)

// ErrNotConfigured is FromSettings' answer when INVOICED_MODEL_PROVIDER is
// unset: the service runs, and /v1/chat answers 503 naming the settings.
var ErrNotConfigured = errors.New("no model provider configured (INVOICED_MODEL_PROVIDER)")

// FromSettings builds the provider the settings name: get returns a
// setting's value ("" when unset).
//
//	INVOICED_MODEL_PROVIDER  openai | scripted
//	INVOICED_MODEL_BASE_URL  openai: the API root (default https://api.openai.com/v1)
//	INVOICED_MODEL_API_KEY   openai: the key, sent as a Bearer token
//	INVOICED_MODEL_NAME      openai: the model name (required)
//	INVOICED_MODEL_IDLE_TIMEOUT openai: how long a step may go without a byte (default 60s)
//	INVOICED_MODEL_STREAM_USAGE openai: false leaves stream_options.include_usage out (default true)
//	INVOICED_MODEL_SCRIPT    scripted: the script file (see Script)
func FromSettings(get func(key string) string) (Provider, error) {
	switch p := get("INVOICED_MODEL_PROVIDER"); p {
	case "":
		// Settings for a provider without the provider are a mistake
		// to name at start, not a service without a model.
		for _, k := range []string{"INVOICED_MODEL_BASE_URL", "INVOICED_MODEL_API_KEY", "INVOICED_MODEL_NAME", "INVOICED_MODEL_IDLE_TIMEOUT", "INVOICED_MODEL_STREAM_USAGE", "INVOICED_MODEL_SCRIPT"} {
			if get(k) != "" {
				return nil, fmt.Errorf("%s is set but INVOICED_MODEL_PROVIDER is not: set it to openai or scripted, or unset %s", k, k)
			}
		}
		return nil, ErrNotConfigured
	case "openai":
		var idle time.Duration
		if v := get("INVOICED_MODEL_IDLE_TIMEOUT"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("INVOICED_MODEL_IDLE_TIMEOUT must be a positive duration such as 60s, not %q", v)
			}
			idle = d
		}
		noUsage := false
		switch v := get("INVOICED_MODEL_STREAM_USAGE"); v {
		case "", "true":
		case "false":
			noUsage = true
		default:
			return nil, fmt.Errorf("INVOICED_MODEL_STREAM_USAGE must be true or false, not %q", v)
		}
		return NewOpenAI(OpenAIConfig{
			BaseURL:       get("INVOICED_MODEL_BASE_URL"),
			APIKey:        get("INVOICED_MODEL_API_KEY"),
			Model:         get("INVOICED_MODEL_NAME"),
			IdleTimeout:   idle,
			NoStreamUsage: noUsage,
		})
	case "scripted":
		path := get("INVOICED_MODEL_SCRIPT")
		if path == "" {
			return nil, errors.New("INVOICED_MODEL_PROVIDER=scripted needs INVOICED_MODEL_SCRIPT, the path of a script file")
		}
		return LoadScript(path)
	default:
		return nil, fmt.Errorf("INVOICED_MODEL_PROVIDER must be openai or scripted, not %q", p)
	}
}
