package rollout

import (
	"fmt"

	"github.com/mtgrpo/mtgrpo/torch"
)

// MockModel is a Backend whose logits are computed in Go from each slot's token history, for
// testing engine logic without weights. It keeps the histories itself, so a wrong slot, a missed
// prefill or a missed cache copy changes the logits a test sees. Calls records every Extend.
type MockModel struct {
	V, NumSlots, Len int
	Stops            []int
	// Logits returns the next-token logits after history (len V).
	Logits func(history []int32) []float32

	Calls   []MockCall
	history [][]int32
}

// MockCall is one Extend: the slots and how many new tokens each got.
type MockCall struct {
	Slots []int
	New   []int
}

// NewMockModel makes a mock of vocab v with slots slots of maxLen tokens.
func NewMockModel(v, slots, maxLen int, logits func(history []int32) []float32) *MockModel {
	return &MockModel{V: v, NumSlots: slots, Len: maxLen, Logits: logits, history: make([][]int32, slots)}
}

// Vocab is V.
func (m *MockModel) Vocab() int { return m.V }

// Slots is NumSlots.
func (m *MockModel) Slots() int { return m.NumSlots }

// MaxLen is Len.
func (m *MockModel) MaxLen() int { return m.Len }

// StopTokenIDs is Stops.
func (m *MockModel) StopTokenIDs() []int { return m.Stops }

// Reset empties a slot's history.
func (m *MockModel) Reset(slot int) { m.history[slot] = nil }

// History is what slot holds.
func (m *MockModel) History(slot int) []int32 { return m.history[slot] }

// Extend appends to the slots' histories and returns Logits of each (a CPU tensor).
func (m *MockModel) Extend(slots []int, tokens [][]int32) (*torch.Tensor, error) {
	call := MockCall{Slots: append([]int(nil), slots...)}
	seen := map[int]bool{}
	out := make([]float32, 0, len(slots)*m.V)
	for i, s := range slots {
		if s < 0 || s >= m.NumSlots || seen[s] {
			return nil, fmt.Errorf("mock: bad or repeated slot %d", s)
		}
		seen[s] = true
		if len(tokens[i]) == 0 || len(m.history[s])+len(tokens[i]) > m.Len {
			return nil, fmt.Errorf("mock: slot %d: %d new tokens on %d cached (max %d)", s, len(tokens[i]), len(m.history[s]), m.Len)
		}
		m.history[s] = append(m.history[s], tokens[i]...)
		call.New = append(call.New, len(tokens[i]))
		row := m.Logits(m.history[s])
		if len(row) != m.V {
			return nil, fmt.Errorf("mock: logits of length %d, want %d", len(row), m.V)
		}
		out = append(out, row...)
	}
	m.Calls = append(m.Calls, call)
	return torch.FromSlice(out, int64(len(slots)), int64(m.V)), nil
}

// Fork copies src's history into dsts.
func (m *MockModel) Fork(src int, dsts ...int) error {
	for _, d := range dsts {
		if d == src {
			return fmt.Errorf("mock: fork %d into itself", src)
		}
		m.history[d] = append([]int32(nil), m.history[src]...)
	}
	return nil
}
