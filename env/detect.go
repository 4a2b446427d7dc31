package env

// The single- vs multi-turn rule (after verifiers, whose SingleTurnEnv ends after the first
// response and whose ToolEnv and MultiTurnEnv loop until the environment says done):
//
//	multi-turn  ⇔  the environment offers tools (built-in, MCP or through its protocol)
//	               or allows more than one assistant turn
//
// A multi-turn environment runs through the multi-turn driver: tools listed in the chat
// template, one training sample per turn. A single-turn environment (no tools, one turn) runs
// the plain GRPO path: one prompt, one response, one sample, exactly as before tools existed.
// Adding an MCP server to a single-turn task therefore makes it multi-turn (with the default
// tool-turn limit), and an OpenEnv environment is always multi-turn: its server decides when an
// episode is done.

// DefaultToolTurns is the turn limit given to a one-turn environment that gains tools (from
// MCP servers): one answer turn after up to three tool calls.
const DefaultToolTurns = 4

// IsMultiTurn applies the rule to an environment with tools tools and a limit of maxTurns
// assistant turns (0 or 1: one turn).
func IsMultiTurn(tools, maxTurns int) bool { return tools > 0 || maxTurns > 1 }
