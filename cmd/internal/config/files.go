package config

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Files are the data files of data.train or data.val: one path, or a list whose files are read in
// order and their rows concatenated (verl's data.train_files takes a list). Empty: the
// environment generates the tasks.
type Files []string

// UnmarshalYAML reads a path ("" is none) or a list of paths.
func (f *Files) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*f = nil
		if n.Value != "" {
			*f = Files{n.Value}
		}
		return nil
	case yaml.SequenceNode:
		out := make(Files, 0, len(n.Content))
		for i, item := range n.Content {
			if item.Kind != yaml.ScalarNode || item.Value == "" {
				return fmt.Errorf("file %d of the list: want a path, got %s", i+1, shown(item))
			}
			out = append(out, item.Value)
		}
		*f = out
		return nil
	}
	return fmt.Errorf("want a file path or a list of paths, got %s", kindName(n))
}

// MarshalYAML writes one file as its path, several as a list ("" for none), as they are read.
func (f Files) MarshalYAML() (any, error) {
	switch len(f) {
	case 0:
		return "", nil
	case 1:
		return f[0], nil
	}
	return []string(f), nil
}

// Has reports whether path is one of the files.
func (f Files) Has(path string) bool { return slices.Contains(f, path) }

// String is the files separated by commas, for messages.
func (f Files) String() string { return strings.Join(f, ", ") }
