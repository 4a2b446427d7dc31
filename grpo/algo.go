package grpo

import "github.com/mtgrpo/mtgrpo/grpo/algo"

// The settings of Config that are declared by grpo/algo, under the names the trainer's code uses
// (the configuration's other readers name them through algo).
type (
	// AdvConfig configures the advantage estimator (algo.AdvConfig).
	AdvConfig = algo.AdvConfig
	// AggConfig configures loss aggregation (algo.AggConfig).
	AggConfig = algo.AggConfig
	// KLKind names a KL estimator (algo.KLKind).
	KLKind = algo.KLKind
	// Schedule is the learning-rate schedule after warmup (algo.Schedule).
	Schedule = algo.Schedule
)

// Estimators, KL estimators and schedules the trainer branches on (see algo).
const (
	EstMTGRPO      = algo.EstMTGRPO
	EstGAE         = algo.EstGAE
	EstReinforcePP = algo.EstReinforcePP

	KLK1  = algo.KLK1
	KLK2  = algo.KLK2
	KLK3  = algo.KLK3
	KLAbs = algo.KLAbs

	Constant = algo.Constant
)

// Parsers of the settings above and the learning rate of a step (see algo).
var (
	ParseKLKind   = algo.ParseKLKind
	ParseSchedule = algo.ParseSchedule
	LR            = algo.LR
)
