package env

import "regexp"

func regexpMust(s string) *regexp.Regexp { return regexp.MustCompile(s) }
