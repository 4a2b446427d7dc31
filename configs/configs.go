// Package configs holds the example run configurations (YAML). The demo's configuration is
// embedded in the binary from here, so `mtgrpo demo` needs no file beside it; the others are
// read from disk with `mtgrpo train --config configs/NAME.yaml`.
package configs

import "embed"

// FS holds every configuration of this directory.
//
//go:embed *.yaml
var FS embed.FS

// Demo and DemoShort are the demo's configuration and the short variant's overlay.
const (
	Demo      = "demo.yaml"
	DemoShort = "demo-short.yaml"
)
