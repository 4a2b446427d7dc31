package shard

import (
	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/model"
)

// PlanModel is the shape of a model as the memory model (package memplan) takes it, from its
// config alone.
func PlanModel(c *model.Config) (memplan.Model, error) {
	n, err := c.NumParameters()
	if err != nil {
		return memplan.Model{}, err
	}
	return memplan.Model{Params: n, Hidden: c.HiddenSize, Intermediate: c.IntermediateSize,
		Layers: c.NumHiddenLayers, Heads: c.NumAttentionHeads, KVHeads: c.KVHeads(), HeadDim: c.HeadDimension(),
		Vocab: c.VocabSize, Tied: c.TieWordEmbeddings}, nil
}
