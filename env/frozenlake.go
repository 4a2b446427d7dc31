package env

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/mtgrpo/mtgrpo/env/data"
)

// FrozenLake as text, following RAGEN (ragen/env/frozen_lake): a size×size lake with random start
// and goal and holes with probability 1−p (p = 0.8), regenerated until a path exists; the grid is
// rendered one row per line with P player, _ frozen (the start too), O hole, G goal, X player in
// a hole, √ player on the goal. Actions are Left, Down, Right, Up (gym's 0..3), written in
// <answer>...</answer>, several separated by "||" or ",". On slippery ice the move goes in the
// intended direction or one of the two perpendicular ones, each with probability 1/3 (gym's
// FrozenLake). The episode ends at the goal (success, reward 1), in a hole, after MaxSteps
// actions or after MaxTurns turns.

// LakeTruth is a frozen-lake row's ground truth: the map rows ("S", "F", "H", "G") and ice.
type LakeTruth struct {
	Map      []string `json:"map"`
	Slippery bool     `json:"slippery"`
}

var (
	lakeActions = []string{"Left", "Down", "Right", "Up"}
	lakeMoves   = [4][2]int{{0, -1}, {1, 0}, {0, 1}, {-1, 0}} // (drow, dcol)
)

// FrozenLakeInstruction is the system prompt (RAGEN's wording, adapted).
const FrozenLakeInstruction = `You are solving the FrozenLake puzzle. Walk on the frozen lake from the player P to the goal G without falling into a hole O. Symbols: P player, _ frozen ice, O hole, G goal, X player in a hole, √ player on the goal. The ice may be slippery: you can move in a direction other than the one you chose. Actions: Left, Down, Right, Up. Think briefly, then give one or more actions separated by || inside <answer></answer>, for example <answer>Left || Up</answer>.`

// FrozenLake's default limits (FrozenLake.MaxTurns, MaxActionsPerTurn, MaxSteps).
const (
	lakeTurns          = 5
	lakeActionsPerTurn = 3
	lakeSteps          = 10
)

// FrozenLake is the environment.
type FrozenLake struct {
	// MaxTurns bounds assistant turns (default 5); MaxActionsPerTurn the actions taken from one
	// answer (default 3, extra ones are ignored and counted invalid); MaxSteps the actions in the
	// whole episode (default 10).
	MaxTurns, MaxActionsPerTurn, MaxSteps int

	truth    LakeTruth
	row, col int
	rng      *rand.Rand
	turns    int
	steps    int
	done     bool
	started  bool
}

// Reset implements Env.
func (f *FrozenLake) Reset(_ context.Context, t Task) (Start, error) {
	var truth LakeTruth
	if err := json.Unmarshal([]byte(t.GroundTruth), &truth); err != nil {
		return Start{}, fmt.Errorf("frozenlake: task %s: ground_truth is not a lake ({\"map\": [...], \"slippery\": bool}): %v", t.ID, err)
	}
	if err := checkLake(truth.Map); err != nil {
		return Start{}, fmt.Errorf("frozenlake: task %s: %v", t.ID, err)
	}
	*f = FrozenLake{MaxTurns: f.MaxTurns, MaxActionsPerTurn: f.MaxActionsPerTurn, MaxSteps: f.MaxSteps, truth: truth, started: true,
		rng: rand.New(rand.NewPCG(uint64(t.Seed), 0x1a4e))}
	for r, line := range truth.Map {
		if c := strings.IndexByte(line, 'S'); c >= 0 {
			f.row, f.col = r, c
		}
	}
	return Start{Messages: append([]Message{Text(RoleSystem, FrozenLakeInstruction)}, t.Prompt...)}, nil
}

func checkLake(m []string) error {
	if len(m) == 0 {
		return fmt.Errorf("empty map")
	}
	s, g := 0, 0
	for _, line := range m {
		if len(line) != len(m[0]) {
			return fmt.Errorf("map rows differ in length")
		}
		for _, c := range line {
			switch c {
			case 'S':
				s++
			case 'G':
				g++
			case 'F', 'H':
			default:
				return fmt.Errorf("map has %q (want S, F, H, G)", c)
			}
		}
	}
	if s != 1 || g != 1 {
		return fmt.Errorf("map needs exactly one S and one G")
	}
	return nil
}

// Step implements Env.
func (f *FrozenLake) Step(ctx context.Context, text string) (StepResult, error) {
	if !f.started {
		return StepResult{}, errNotStarted
	}
	if f.done {
		return StepResult{}, fmt.Errorf("frozenlake: Step after the episode ended")
	}
	if err := ctx.Err(); err != nil {
		return StepResult{}, err
	}
	f.turns++
	res := StepResult{Assistant: Text(RoleAssistant, strings.TrimSpace(text))}
	actions, bad := parseActions(text, def(f.MaxActionsPerTurn, lakeActionsPerTurn))
	res.Info.InvalidActions = bad
	var taken []string
	for _, a := range actions {
		if f.done || f.steps >= def(f.MaxSteps, lakeSteps) {
			break
		}
		f.move(a)
		f.steps++
		res.Info.ValidActions++
		taken = append(taken, lakeActions[a])
		if cell := f.cell(); cell == 'G' || cell == 'H' {
			f.done = true
			res.Info.Success = cell == 'G'
			res.Info.Reward = b2f(cell == 'G')
		}
	}
	if f.turns >= def(f.MaxTurns, lakeTurns) || f.steps >= def(f.MaxSteps, lakeSteps) {
		f.done = true
		res.Info.Truncated = !res.Info.Success && f.cell() != 'H'
	}
	res.Done = f.done
	res.Messages = []Message{Text(RoleUser, f.feedback(taken, bad))}
	return res, nil
}

func def(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}

// parseActions reads the actions in the last <answer>; words that are no action count as bad.
func parseActions(text string, limit int) (acts []int, bad int) {
	body, ok := ExtractTag(text, "answer")
	if !ok {
		return nil, 1
	}
	for _, w := range strings.FieldsFunc(body, func(r rune) bool { return r == '|' || r == ',' || r == '\n' }) {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		idx := -1
		for i, a := range lakeActions {
			if strings.EqualFold(w, a) {
				idx = i
			}
		}
		if idx < 0 || len(acts) >= limit {
			bad++
			continue
		}
		acts = append(acts, idx)
	}
	if len(acts) == 0 && bad == 0 {
		bad = 1
	}
	return acts, bad
}

// move applies action a, slipping to a perpendicular direction with probability 2/3 on slippery
// ice (gym: [(a−1) mod 4, a, (a+1) mod 4], equally likely). Walls stop the player.
func (f *FrozenLake) move(a int) {
	if f.truth.Slippery {
		a = (a + 3 + f.rng.IntN(3)) % 4
	}
	r, c := f.row+lakeMoves[a][0], f.col+lakeMoves[a][1]
	if r >= 0 && r < len(f.truth.Map) && c >= 0 && c < len(f.truth.Map[0]) {
		f.row, f.col = r, c
	}
}

func (f *FrozenLake) cell() byte { return f.truth.Map[f.row][f.col] }

// Render draws the grid in RAGEN's symbols.
func (f *FrozenLake) Render() string { return renderLake(f.truth.Map, f.row, f.col) }

func renderLake(m []string, pr, pc int) string {
	var b strings.Builder
	for r, line := range m {
		for c := 0; c < len(line); c++ {
			ch := line[c]
			switch {
			case r == pr && c == pc && ch == 'H':
				b.WriteString("X")
			case r == pr && c == pc && ch == 'G':
				b.WriteString("√")
			case r == pr && c == pc:
				b.WriteString("P")
			case ch == 'H':
				b.WriteString("O")
			case ch == 'G':
				b.WriteString("G")
			default:
				b.WriteString("_")
			}
		}
		if r < len(m)-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func (f *FrozenLake) feedback(taken []string, bad int) string {
	var b strings.Builder
	if bad > 0 {
		fmt.Fprintf(&b, "%d invalid action(s): answer with Left, Down, Right or Up inside <answer></answer>.\n", bad)
	}
	if len(taken) > 0 {
		fmt.Fprintf(&b, "You moved: %s.\n", strings.Join(taken, ", "))
	}
	b.WriteString(f.Render())
	switch {
	case f.cell() == 'G':
		b.WriteString("\nYou reached the goal!")
	case f.cell() == 'H':
		b.WriteString("\nYou fell into a hole.")
	case f.done:
		b.WriteString("\nOut of moves.")
	}
	return b.String()
}

// MultiTurn implements Env.
func (f *FrozenLake) MultiTurn() bool { return true }

// Rubric implements Env.
func (f *FrozenLake) Rubric() *Rubric { return GameRubric() }

// Close implements Env.
func (f *FrozenLake) Close() error { return nil }

// GameRubric: reward = success; turn reward = −0.1 per move not understood (RAGEN's invalid-action
// penalty; InvalidActionsTurn says why moves that were understood earn nothing).
func GameRubric() *Rubric {
	return &Rubric{Funcs: []RewardFunc{SuccessReward(1)}, Turn: []TurnRewardFunc{InvalidActionsTurn(0.1)}}
}

// GenerateLake draws a RAGEN-style map: holes with probability 1−p, start and goal at distinct
// random cells, redrawn until the goal is reachable.
func GenerateLake(r *rand.Rand, size int, p float64) []string {
	for {
		g := make([][]byte, size)
		for i := range g {
			g[i] = make([]byte, size)
			for j := range g[i] {
				g[i][j] = 'F'
				if r.Float64() >= p {
					g[i][j] = 'H'
				}
			}
		}
		sr, sc, gr, gc := r.IntN(size), r.IntN(size), r.IntN(size), r.IntN(size)
		if sr == gr && sc == gc {
			continue
		}
		g[sr][sc], g[gr][gc] = 'S', 'G'
		if reachable(g, sr, sc) {
			m := make([]string, size)
			for i := range g {
				m[i] = string(g[i])
			}
			return m
		}
	}
}

func reachable(g [][]byte, sr, sc int) bool {
	seen := map[[2]int]bool{{sr, sc}: true}
	stack := [][2]int{{sr, sc}}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, d := range lakeMoves {
			r, c := p[0]+d[0], p[1]+d[1]
			if r < 0 || r >= len(g) || c < 0 || c >= len(g) || seen[[2]int{r, c}] || g[r][c] == 'H' {
				continue
			}
			if g[r][c] == 'G' {
				return true
			}
			seen[[2]int{r, c}] = true
			stack = append(stack, [2]int{r, c})
		}
	}
	return false
}

// Lake sizes (Config.Lake.Size): DefaultLakeSize is RAGEN's 4×4. MaxLakeSize (6) is the largest
// whose opposite corners, 2·(size−1) moves apart on open ice, lie within an episode's lakeSteps
// moves; on a larger lake many goals would be out of reach before any hole is in the way.
const (
	DefaultLakeSize = 4
	MinLakeSize     = 2
	MaxLakeSize     = lakeSteps/2 + 1
)

// GenerateFrozenLake makes n size×size lakes (p 0.8; slippery as given).
func GenerateFrozenLake(n int, seed int64, size int, slippery bool) []data.Row {
	return take(n, frozenLakeStream(seed, size, slippery))
}

// frozenLakeStream makes the same tasks one at a time.
func frozenLakeStream(seed int64, size int, slippery bool) stream {
	r := newRand(seed, "frozenlake")
	return func(i int) data.Row {
		m := GenerateLake(r, size, 0.8)
		truth, _ := json.Marshal(LakeTruth{Map: m, Slippery: slippery})
		pr, pc := 0, 0
		for ri, line := range m {
			if c := strings.IndexByte(line, 'S'); c >= 0 {
				pr, pc = ri, c
			}
		}
		return data.Row{
			DataSource:  "frozenlake",
			Prompt:      []data.Message{{Role: "user", Content: "The lake:\n" + renderLake(m, pr, pc) + "\nDecide your next action(s)."}},
			Ability:     "game",
			RewardModel: data.RewardModel{Style: "rule", GroundTruth: string(truth)},
			ExtraInfo:   map[string]any{"split": "train", "index": int64(i)},
		}
	}
}
