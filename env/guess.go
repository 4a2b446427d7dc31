package env

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/mtgrpo/mtgrpo/env/data"
)

// GuessNumber: the model guesses a secret integer in [Low, High]; after each guess the
// environment answers "Higher." (the secret is larger) or "Lower." (it is smaller). A guess is
// the integer in <answer>...</answer>. Success ends the episode; so does running out of turns.
// Binary search needs at most ceil(log2(High−Low+2)) guesses (7 for 1..100), the default limit.
type GuessNumber struct {
	// MaxTurns bounds guesses (default 7).
	MaxTurns int

	secret  int
	turns   int
	done    bool
	started bool
}

// guessTurns is GuessNumber's default MaxTurns: binary search over 1..100 needs at most 7.
const guessTurns = 7

// GuessInstruction is the system prompt.
const GuessInstruction = `We play a game: I am thinking of an integer, and you guess it. After each guess I say "Higher." if my number is larger than your guess, or "Lower." if it is smaller. Give each guess as <answer>N</answer>.`

// Reset implements Env.
func (g *GuessNumber) Reset(_ context.Context, t Task) (Start, error) {
	n, err := strconv.Atoi(strings.TrimSpace(t.GroundTruth))
	if err != nil {
		return Start{}, fmt.Errorf("guess_number: task %s: ground_truth %q is not an integer", t.ID, t.GroundTruth)
	}
	*g = GuessNumber{MaxTurns: g.MaxTurns, secret: n, started: true}
	return Start{Messages: append([]Message{Text(RoleSystem, GuessInstruction)}, t.Prompt...)}, nil
}

// Step implements Env.
func (g *GuessNumber) Step(ctx context.Context, text string) (StepResult, error) {
	if !g.started {
		return StepResult{}, errNotStarted
	}
	if g.done {
		return StepResult{}, fmt.Errorf("guess_number: Step after the episode ended")
	}
	if err := ctx.Err(); err != nil {
		return StepResult{}, err
	}
	g.turns++
	res := StepResult{Assistant: Text(RoleAssistant, strings.TrimSpace(text))}
	var reply string
	body, ok := ExtractTag(text, "answer")
	guess, err := strconv.Atoi(strings.TrimSpace(body))
	switch {
	case !ok || err != nil:
		res.Info.InvalidActions = 1
		reply = "Invalid guess: answer with one integer inside <answer></answer>."
	case guess == g.secret:
		res.Info.ValidActions, res.Info.Success, res.Info.Reward = 1, true, 1
		reply = "Correct!"
		g.done = true
	case guess < g.secret:
		res.Info.ValidActions = 1
		reply = "Higher."
	default:
		res.Info.ValidActions = 1
		reply = "Lower."
	}
	if !g.done && g.turns >= def(g.MaxTurns, guessTurns) {
		g.done, res.Info.Truncated = true, true
		reply += " Out of guesses."
	}
	res.Done = g.done
	res.Messages = []Message{Text(RoleUser, reply)}
	return res, nil
}

// MultiTurn implements Env.
func (g *GuessNumber) MultiTurn() bool { return true }

// Rubric implements Env.
func (g *GuessNumber) Rubric() *Rubric { return GameRubric() }

// Close implements Env.
func (g *GuessNumber) Close() error { return nil }

// GenerateGuess makes n games with a secret in 1..100.
func GenerateGuess(n int, seed int64) []data.Row { return take(n, guessStream(seed)) }

// guessStream makes the same tasks one at a time.
func guessStream(seed int64) stream {
	r := newRand(seed, "guess_number")
	return func(i int) data.Row {
		return data.Row{
			DataSource:  "guess_number",
			Prompt:      []data.Message{{Role: "user", Content: "I am thinking of an integer between 1 and 100. Your first guess?"}},
			Ability:     "game",
			RewardModel: data.RewardModel{Style: "rule", GroundTruth: strconv.Itoa(1 + r.IntN(100))},
			ExtraInfo:   map[string]any{"split": "train", "index": int64(i), "low": int64(1), "high": int64(100)},
		}
	}
}
