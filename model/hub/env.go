package hub

import (
	"os"
	"path/filepath"
	"strings"
)

// DefaultEndpoint is the public Hub.
const DefaultEndpoint = "https://huggingface.co"

// Env is where the Hub and the cache are, read from the environment as huggingface_hub reads it.
type Env struct {
	Endpoint string // $HF_ENDPOINT, without a trailing slash (default DefaultEndpoint)
	Cache    string // $HF_HUB_CACHE, else $HF_HOME/hub
	Token    string // $HF_TOKEN, else the token file ($HF_TOKEN_PATH, default $HF_HOME/token)
	Offline  bool   // $HF_HUB_OFFLINE set to 1, true, on or yes
}

// FromEnv reads Env through lookup (os.LookupEnv in the command).
func FromEnv(lookup func(string) (string, bool)) Env {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	home := get("HF_HOME")
	if home == "" {
		base := get("XDG_CACHE_HOME")
		if base == "" {
			h := get("HOME")
			if h == "" {
				h, _ = os.UserHomeDir()
			}
			base = filepath.Join(h, ".cache")
		}
		home = filepath.Join(base, "huggingface")
	}
	e := Env{Endpoint: strings.TrimRight(get("HF_ENDPOINT"), "/"), Cache: get("HF_HUB_CACHE"), Token: get("HF_TOKEN")}
	if e.Endpoint == "" {
		e.Endpoint = DefaultEndpoint
	}
	if e.Cache == "" {
		e.Cache = get("HUGGINGFACE_HUB_CACHE") // the older name
	}
	if e.Cache == "" {
		e.Cache = filepath.Join(home, "hub")
	}
	if e.Token == "" {
		e.Token = get("HUGGING_FACE_HUB_TOKEN") // the older name
	}
	if e.Token == "" {
		path := get("HF_TOKEN_PATH")
		if path == "" {
			path = filepath.Join(home, "token")
		}
		if b, err := os.ReadFile(path); err == nil {
			e.Token = strings.TrimSpace(string(b))
		}
	}
	switch strings.ToLower(get("HF_HUB_OFFLINE")) {
	case "1", "true", "on", "yes":
		e.Offline = true
	}
	return e
}
