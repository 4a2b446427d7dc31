package grpo

import "github.com/mtgrpo/mtgrpo/grpo/algo"

// The settings of Config that are declared by grpo/algo, under the names the trainer's
// configuration has always used (cmd/internal/config reads and validates them as grpo's).
type (
	// AdvConfig configures the advantage estimator (algo.AdvConfig).
	AdvConfig = algo.AdvConfig
	// GAEConfig configures gae (algo.GAEConfig).
	GAEConfig = algo.GAEConfig
	// Estimator names an advantage estimator (algo.Estimator).
	Estimator = algo.Estimator
	// AggConfig configures loss aggregation (algo.AggConfig).
	AggConfig = algo.AggConfig
	// AggMode names a loss aggregation (algo.AggMode).
	AggMode = algo.AggMode
	// TurnWeighting says what a sequence is for the seq-mean modes (algo.TurnWeighting).
	TurnWeighting = algo.TurnWeighting
	// KLKind names a KL estimator (algo.KLKind).
	KLKind = algo.KLKind
	// Schedule is the learning-rate schedule after warmup (algo.Schedule).
	Schedule = algo.Schedule
)

// Estimators, KL estimators and schedules (see algo).
const (
	EstGRPO                = algo.EstGRPO
	EstDrGRPO              = algo.EstDrGRPO
	EstRLOO                = algo.EstRLOO
	EstReinforcePPBaseline = algo.EstReinforcePPBaseline
	EstMultiTurnGRPO       = algo.EstMultiTurnGRPO
	EstMTGRPO              = algo.EstMTGRPO
	EstGAE                 = algo.EstGAE

	KLK1  = algo.KLK1
	KLK2  = algo.KLK2
	KLK3  = algo.KLK3
	KLAbs = algo.KLAbs

	Constant = algo.Constant
	Cosine   = algo.Cosine
)

// Parsers of the settings above and the learning rate of a step (see algo).
var (
	ParseEstimator     = algo.ParseEstimator
	ParseAggMode       = algo.ParseAggMode
	ParseTurnWeighting = algo.ParseTurnWeighting
	ParseKLKind        = algo.ParseKLKind
	ParseSchedule      = algo.ParseSchedule
	LR                 = algo.LR
)
