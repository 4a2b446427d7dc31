package env

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// lakeView is a frozen lake as an observation draws it: the cells (F ice, H hole, G goal) and
// where the player stands.
type lakeView struct {
	cells    []string
	row, col int
}

// lakeSymbols are the cells of renderLake's symbols, and whether the player stands there.
var lakeSymbols = map[rune]struct {
	cell   byte
	player bool
}{'P': {'F', true}, '_': {'F', false}, 'O': {'H', false}, 'G': {'G', false}, 'X': {'H', true}, '√': {'G', true}}

// readLake reads the last lake drawn in text: the last block of lines made of lake symbols only,
// all of one length, with one player.
func readLake(text string) (lakeView, bool) {
	var last, block []string
	for _, line := range append(strings.Split(text, "\n"), "") {
		if isLakeLine(line) {
			block = append(block, line)
			continue
		}
		if len(block) > 0 {
			last, block = block, nil
		}
	}
	var v lakeView
	players := 0
	for r, line := range last {
		var row []byte
		for c, ch := range []rune(line) {
			s := lakeSymbols[ch]
			row = append(row, s.cell)
			if s.player {
				v.row, v.col = r, c
				players++
			}
		}
		if len(row) != len([]rune(last[0])) {
			return lakeView{}, false
		}
		v.cells = append(v.cells, string(row))
	}
	return v, players == 1
}

func isLakeLine(line string) bool {
	for _, ch := range line {
		if _, ok := lakeSymbols[ch]; !ok {
			return false
		}
	}
	return line != ""
}

// lastLake is the lake of the last user message that draws one (the latest observation, or the
// prompt before the first move).
func lastLake(msgs []Message) (lakeView, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != RoleUser {
			continue
		}
		if v, ok := readLake(msgs[i].Content); ok {
			return v, true
		}
	}
	return lakeView{}, false
}

// next is the cell action a leads to; walls keep the player where it is.
func (v lakeView) next(r, c, a int) (int, int) {
	nr, nc := r+lakeMoves[a][0], c+lakeMoves[a][1]
	if nr < 0 || nr >= len(v.cells) || nc < 0 || nc >= len(v.cells[0]) {
		return r, c
	}
	return nr, nc
}

// distances is each cell's number of moves to the goal over ice (-1: the goal cannot be
// reached from it, holes included), by breadth-first search from the goal.
func (v lakeView) distances() [][]int {
	d := make([][]int, len(v.cells))
	var queue [][2]int
	for r, line := range v.cells {
		d[r] = make([]int, len(line))
		for c := range d[r] {
			d[r][c] = -1
			if line[c] == 'G' {
				d[r][c] = 0
				queue = append(queue, [2]int{r, c})
			}
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for a := range lakeMoves {
			r, c := v.next(p[0], p[1], a)
			if d[r][c] < 0 && v.cells[r][c] != 'H' {
				d[r][c] = d[p[0]][p[1]] + 1
				queue = append(queue, [2]int{r, c})
			}
		}
	}
	return d
}

// path is the first n actions of a shortest path to the goal (the first of Left, Down, Right,
// Up that gets one step closer, at every step).
func (v lakeView) path(d [][]int, n int) []int {
	var acts []int
	r, c := v.row, v.col
	for len(acts) < n && d[r][c] > 0 {
		for a := range lakeMoves {
			if nr, nc := v.next(r, c, a); d[nr][nc] == d[r][c]-1 {
				acts = append(acts, a)
				r, c = nr, nc
				break
			}
		}
	}
	return acts
}

// Slippery ice: the demonstrator sends slipperyMoves moves per turn, each the move most likely
// to reach the goal (slipperyPolicy) from where the one before it was meant to lead, with
// future value discounted by slipperyDiscount (a nearer goal is worth more: an episode has few
// moves). Over 600 slippery lakes played through the game, 2 moves per turn won 0.45 of them,
// 1 move 0.31 and 3 moves 0.41 (discount 0.8 to 0.99 moved these by 0.03 at most); the shortest
// path, replanned each turn, won 0.35 with 3 moves per turn and 0.22 with 1.
const (
	slipperyMoves    = 2
	slipperyDiscount = 0.9
)

// slipperyPolicy is, for each ice cell, the move most likely to reach the goal on slippery ice
// (gym's slip: the chosen direction or either perpendicular one, 1/3 each), by value iteration:
//
//	V(s) = max_a Σ_{a' ∈ {a−1, a, a+1}} 1/3 · (1 at the goal, 0 in a hole, γ·V(s') on ice)
func (v lakeView) slipperyPolicy() [][]int {
	value, move := make([][]float64, len(v.cells)), make([][]int, len(v.cells))
	for r := range v.cells {
		value[r], move[r] = make([]float64, len(v.cells[r])), make([]int, len(v.cells[r]))
	}
	for range 100 { // 16 cells: the values settle long before
		for r, line := range v.cells {
			for c := range line {
				if line[c] != 'F' {
					continue
				}
				best := -1.0
				for a := range lakeMoves {
					q := 0.0
					for _, slip := range []int{3, 0, 1} {
						switch nr, nc := v.next(r, c, (a+slip)%4); v.cells[nr][nc] {
						case 'G':
							q += 1.0 / 3
						case 'F':
							q += slipperyDiscount * value[nr][nc] / 3
						}
					}
					if q > best {
						best, value[r][c], move[r][c] = q, q, a
					}
				}
			}
		}
	}
	return move
}

// slipperyPlan is the next n moves of slipperyPolicy, each from where the one before was meant
// to lead.
func (v lakeView) slipperyPlan(n int) []int {
	policy := v.slipperyPolicy()
	var acts []int
	for r, c := v.row, v.col; len(acts) < n && v.cells[r][c] == 'F'; {
		a := policy[r][c]
		acts = append(acts, a)
		r, c = v.next(r, c, a)
	}
	return acts
}

func lakeAnswer(acts []int) string {
	names := make([]string, len(acts))
	for i, a := range acts {
		names[i] = lakeActions[a]
	}
	return "<answer>" + strings.Join(names, " || ") + "</answer>"
}

// lakeDemonstrators play FrozenLake from the lake the last observation draws. The perfect one
// walks a shortest path on firm ice, as many of its moves per turn as a turn takes (3); on
// slippery ice (the task's ground truth says which) it replans every turn from wherever the
// player slid, sending the 2 moves most likely to reach the goal (slipperyPlan). The imperfect one first makes a wrong move: one step away from the goal
// (or, where no safe cell is farther, into a wall), never into a hole and only where the
// shortest path from there still fits the turns and moves left; then it plays on as the perfect
// one.
func lakeDemonstrators(cfg Config) (perfect, imperfect Demonstrator) {
	slippery := func(task Task) bool {
		var truth LakeTruth
		return json.Unmarshal([]byte(task.GroundTruth), &truth) == nil && truth.Slippery
	}
	perTurn := func(task Task) int {
		if slippery(task) {
			return slipperyMoves
		}
		return lakeActionsPerTurn
	}
	view := func(task Task, msgs []Message) (lakeView, [][]int, error) {
		v, ok := lastLake(msgs)
		if !ok {
			return lakeView{}, nil, fmt.Errorf("env: frozenlake task %s: no message draws the lake", task.ID)
		}
		d := v.distances()
		if d[v.row][v.col] < 0 {
			return lakeView{}, nil, fmt.Errorf("env: frozenlake task %s: no path to the goal from row %d, column %d", task.ID, v.row+1, v.col+1)
		}
		return v, d, nil
	}
	perfect = func(task Task, msgs []Message) (string, error) {
		v, d, err := view(task, msgs)
		if err != nil {
			return "", err
		}
		if slippery(task) {
			return lakeAnswer(v.slipperyPlan(slipperyMoves)), nil
		}
		return lakeAnswer(v.path(d, lakeActionsPerTurn)), nil
	}
	imperfect = func(task Task, msgs []Message) (string, error) {
		if !firstTurn(msgs) {
			return perfect(task, msgs)
		}
		v, d, err := view(task, msgs)
		if err != nil {
			return "", err
		}
		per, turns := perTurn(task), def(cfg.MaxTurns, lakeTurns)
		fits := func(left int) bool { return left >= 0 && 1+left <= lakeSteps && 1+(left+per-1)/per <= turns }
		here := d[v.row][v.col]
		for _, farther := range []int{1, 0} {
			for a := range lakeMoves {
				r, c := v.next(v.row, v.col, a)
				if moved := r != v.row || c != v.col; moved == (farther == 1) && d[r][c] == here+farther && fits(d[r][c]) {
					return lakeAnswer([]int{a}), nil
				}
			}
		}
		return perfect(task, msgs)
	}
	return perfect, imperfect
}

var (
	guessBounds = regexp.MustCompile(`between (\d+) and (\d+)`)
	guessRange  = regexp.MustCompile(`^Range (\d+)-(\d+)\.`)
)

// guessState is the range the secret is known to lie in: the prompt's bounds before the first
// guess; after one, the range the last guess's message wrote ("Range 51-100.") narrowed by the
// reply to its guess.
func guessState(task Task, msgs []Message) (lo, hi int, err error) {
	last := -1
	for i, m := range msgs {
		if m.Role == RoleAssistant {
			last = i
		}
	}
	if last < 0 {
		b := guessBounds.FindStringSubmatch(taskQuestion(task))
		if b == nil {
			return 0, 0, fmt.Errorf("env: guess_number task %s: the prompt says no \"between A and B\"", task.ID)
		}
		lo, _ = strconv.Atoi(b[1])
		hi, _ = strconv.Atoi(b[2])
		return lo, hi, nil
	}
	m := guessRange.FindStringSubmatch(msgs[last].Content)
	body, _ := ExtractTag(msgs[last].Content, "answer")
	g, gerr := strconv.Atoi(body)
	if m == nil || gerr != nil {
		return 0, 0, fmt.Errorf("env: guess_number task %s: the last guess %q is not \"Range A-B. <answer>N</answer>\"", task.ID, msgs[last].Content)
	}
	lo, _ = strconv.Atoi(m[1])
	hi, _ = strconv.Atoi(m[2])
	if last+1 < len(msgs) {
		switch reply := msgs[last+1].Content; {
		case strings.HasPrefix(reply, "Higher."):
			lo = g + 1
		case strings.HasPrefix(reply, "Lower."):
			hi = g - 1
		}
	}
	if lo > hi {
		return 0, 0, fmt.Errorf("env: guess_number task %s: no number is left in %d..%d", task.ID, lo, hi)
	}
	return lo, hi, nil
}

func guessAnswer(lo, hi, g int) string {
	return fmt.Sprintf("Range %d-%d. <answer>%d</answer>", lo, hi, g)
}

// guessDemonstrators play guess_number by binary search, each guess's message writing the range
// it knows ("Range 51-100. <answer>75</answer>") so that the next turn reads it from the last
// step alone. The imperfect one opens off-centre: the lowest guess that still leaves binary
// search enough turns for the larger side (37 for 1..100 in 7 turns), where there is one below
// the middle.
func guessDemonstrators(cfg Config) (perfect, imperfect Demonstrator) {
	perfect = func(task Task, msgs []Message) (string, error) {
		lo, hi, err := guessState(task, msgs)
		if err != nil {
			return "", err
		}
		return guessAnswer(lo, hi, (lo+hi)/2), nil
	}
	imperfect = func(task Task, msgs []Message) (string, error) {
		lo, hi, err := guessState(task, msgs)
		if err != nil || !firstTurn(msgs) {
			return perfect(task, msgs)
		}
		// Binary search finds any of 2^k − 1 numbers in k guesses.
		left := def(cfg.MaxTurns, guessTurns) - 1
		reach := hi - lo + 1
		if left < 31 {
			reach = 1<<left - 1
		}
		if g := max(lo, hi-reach); g < (lo+hi)/2 && g-lo <= reach {
			return guessAnswer(lo, hi, g), nil
		}
		return perfect(task, msgs)
	}
	return perfect, imperfect
}

// guessKey tells guess_number's tasks apart for the imperfect share: their prompts are all
// alike.
func guessKey(task Task) string { return taskQuestion(task) + "\n" + task.ID + "\n" + task.GroundTruth }
