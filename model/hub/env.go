package hub

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultEndpoint is the public Hub.
const DefaultEndpoint = "https://huggingface.co"

// Env is where the Hub and the cache are, read from the environment as huggingface_hub reads it.
type Env struct {
	Endpoint string // $HF_ENDPOINT, without a trailing slash (default DefaultEndpoint)
	Cache    string // $HF_HUB_CACHE, else $HF_HOME/hub
	Token    string // $HF_TOKEN, else the token file ($HF_TOKEN_PATH, default $HF_HOME/token)
	Offline  bool   // $HF_HUB_OFFLINE set to 1, true, on or yes
	// EtagTimeout bounds a metadata request, its answer included ($HF_HUB_ETAG_TIMEOUT in
	// seconds; 0: DefaultEtagTimeout); DownloadTimeout a file download's wait for its headers
	// and each window in which it must make progress ($HF_HUB_DOWNLOAD_TIMEOUT; 0:
	// DefaultDownloadTimeout). deadline.go says how.
	EtagTimeout, DownloadTimeout time.Duration
}

func (e Env) etagTimeout() time.Duration {
	if e.EtagTimeout > 0 {
		return e.EtagTimeout
	}
	return DefaultEtagTimeout
}

func (e Env) downloadTimeout() time.Duration {
	if e.DownloadTimeout > 0 {
		return e.DownloadTimeout
	}
	return DefaultDownloadTimeout
}

// FromEnv reads Env through lookup (os.LookupEnv in the command); a timeout that is not a
// positive number of seconds is an error naming its variable.
func FromEnv(lookup func(string) (string, bool)) (Env, error) {
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
	var err error
	if e.EtagTimeout, err = seconds("HF_HUB_ETAG_TIMEOUT", get("HF_HUB_ETAG_TIMEOUT")); err != nil {
		return Env{}, err
	}
	if e.DownloadTimeout, err = seconds("HF_HUB_DOWNLOAD_TIMEOUT", get("HF_HUB_DOWNLOAD_TIMEOUT")); err != nil {
		return Env{}, err
	}
	return e, nil
}

// maxTimeout bounds the timeouts the environment may set (a day).
const maxTimeout = 24 * time.Hour

// seconds reads a timeout in seconds ("" is 0: the default).
func seconds(name, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 0.001) || f > maxTimeout.Seconds() || math.IsInf(f, 0) {
		return 0, fmt.Errorf("$%s=%q: want a number of seconds from 0.001 to %v", name, v, maxTimeout.Seconds())
	}
	return time.Duration(f * float64(time.Second)), nil
}
