package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mtgrpo/mtgrpo/env"
)

// GeneratorEnv is the environment configuration `mtgrpo data gen` makes task's rows with: the
// defaults and the env.* settings given, checked as a run's are. Only the keys that shape the
// task's rows (env.GeneratorKeys) are accepted; any other is refused by name, since a row
// written with it would be the same row.
func GeneratorEnv(task string, sets []Override) (env.Config, error) {
	c := Defaults()
	shaping := env.GeneratorKeys(task)
	var errs []error
	for _, o := range sets {
		if key, ok := strings.CutPrefix(o.Key, "env."); !ok || !slices.Contains(shaping, key) {
			errs = append(errs, &Error{Where: o.Where, Key: o.Key, Err: fmt.Errorf("does not shape generated %s rows (%s)", task, shapingKeys(shaping))})
			continue
		}
		errs = append(errs, c.Set(o.Key, o.Value, o.Where))
	}
	if err := joinErrors(errs); err != nil {
		return env.Config{}, err
	}
	if err := c.place(c.Env.Config.Validate()); err != nil {
		return env.Config{}, err
	}
	return c.Env.Config, nil
}

// shapingKeys says which keys shape a task's rows.
func shapingKeys(keys []string) string {
	switch len(keys) {
	case 0:
		return "no setting does"
	case 1:
		return "env." + keys[0] + " does"
	default:
		return "env." + strings.Join(keys, " and env.") + " do"
	}
}
