// Package setting is how every section of a run's configuration reports a bad value: a KeyError
// names the key (loss.clip_high, env.lake_size) and the program places it at the file and line,
// variable or flag that set it. Each number's range is declared once, in the Validate of the
// package that owns the key, as a Range (both ends in one declaration: In, AtLeast, Finite);
// named values (estimators, schedules, condensers) decode themselves through Decode and are
// checked with OneOf. grpo, grpo/algo, rollout, env and the program all import it; it imports
// nothing of theirs.
//
// The size ceilings (MaxCount, MaxTrajectories, MaxTokens, MaxTokensPerStep) are far above any
// real run and low enough that what a size implies is allocated without overflow: a mistyped
// exponent is refused with its figures rather than by the kernel's OOM killer.
package setting
