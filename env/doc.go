// Package env holds the environments, tools, reward functions and task generators of multi-turn
// RL. It is pure Go and never imports torch: envs run on ordinary goroutines beside the torch
// thread.
//
// # Contracts (what the rollout calls)
//
//	environment, err := env.Open("calc_mult", env.Config{})   // once: builds shared tools
//	rows, err := data.Read("train.parquet", data.Options{})   // or environment.Generate(n, seed)
//	task := env.TaskFromRow(rows[i], i)
//
//	e := environment.New()                                    // one Env per episode
//	start, err := e.Reset(ctx, task)        // start.Messages: system + prompt; start.Tools: specs
//	for {
//	    text := generate(chatTemplate(history, start.Tools))  // the assistant's decoded message
//	    res, err := e.Step(ctx, text)
//	    traj.Turns = append(traj.Turns, env.Turn{Assistant: text, Result: res,
//	        ContextTokens: len(contextIDs), OutputTokens: len(outputIDs)})
//	    history = append(history, res.Assistant); history = append(history, res.Messages...)
//	    if res.Done { break }
//	}
//	score, err := e.Rubric().Score(&traj)   // Reward, TurnRewards, TurnReward, Metrics
//	e.Close()
//
// Message, ToolCall and ToolSpec have the JSON shapes Hugging Face chat templates take
// (messages with role, content, tool_calls, tool_call_id, name; tools as {"type": "function",
// "function": {name, description, parameters}}). StepResult.Assistant is the parsed assistant
// message (prose + structured tool calls) for re-rendering history; tool results are role "tool"
// messages carrying the call's id and the tool's name; environment feedback is a "user" message.
//
// Tool calls are parsed from the model's text in Qwen's <tool_call>{...}</tool_call> format
// (several per message) and Llama 3's whole-message JSON ({"name", "parameters"}, optionally
// after <|python_tag|>; several calls separated by ";" or as a JSON list). Malformed calls, unknown tools, bad arguments and tool errors become
// "Error: ..." tool messages and counts in TurnInfo; Step never fails on model output.
//
// # Limits
//
// One assistant message may make at most Config.MaxToolCalls tool calls (default 5) and spend
// at most Config.ToolTime on them together (default 20s): calls past the cap are answered by one
// "not run" message, and when the time runs out the running call's context is cancelled and the
// calls not yet run are answered with a timeout message; all of them count as failed calls
// (TurnInfo.ToolCallsDropped, TurnInfo.ToolTimeouts). Tools honour their context: the calculator
// and search stop with its error, the python tool's run is killed. The calculator also bounds
// what one expression can ask for (length, nesting, digits), because reward functions evaluate
// model-written expressions with no deadline. Tool-call parsing is linear in the message.
//
// # Rewards
//
// A Rubric is a list of named, weighted trajectory functions (each reported as reward/<name>)
// and turn functions (turn_reward/<name>). Reward is their weighted sum, or, under the context
// rules of multi-turn GRPO with condensed contexts, 1/max_t|c_t| ("inverse") or
// budget/max_t|c_t| ("scaled") when every gate function (format, correctness) passes and 0
// otherwise. TurnReward is MT-GRPO's R_turn: the turn rewards summed over the turns up to and
// including the first tool call. calc_mult's turn rewards are tool_success and partial_product
// (the turn's tool result is a new product of the question's numbers), so on three or more factors
// R_turn tells a right first step from a miscopied one.
//
// # Environments
//
// gsm8k, gsm8k_python, calc_mult, wiki_qa, frozenlake, guess_number, countdown and data (users'
// rows), by name through Open; each has a seeded generator (Generate) so nothing is downloaded.
// Config (config.go) holds what every environment reads (turns, the reward rule, tool limits)
// and, as groups, what belongs to some: each group of generated-task settings (Math, Mult,
// Facts, Lake) names the generators it shapes in a shapes tag, which is where GeneratorKeys and
// ShapingKeys, and a run's warnings about such a key under another environment, come from.
// Datasets are read and written by package env/data (bounded: a file with no usable row, an
// endless stream or a corrupt parquet file is an error naming the file and row); the python
// tool runs in package env/sandbox.
//
// # Demonstrators
//
// Every environment with a generator has a Demonstrator (Environment.Demonstrate), the policy the
// supervised warm-up (sft.steps) imitates. Each reads where the episode stands from the context's
// messages alone, so it plays the same under every condenser that keeps the last step:
//
//   - gsm8k: the task's worked solution, ending "#### answer".
//   - gsm8k_python: one python call, a program that redoes the worked solution's calculator
//     steps, then "#### " and the number it printed.
//   - calc_mult: one calculator call per factor past the first, then "#### " and the last result.
//   - wiki_qa: a search for the question's country, then the answer read from the passages the
//     search returned, in <answer></answer>.
//   - countdown: an equation a solver finds over the given numbers, its steps in <think></think>
//     and the equation in <answer></answer>.
//   - frozenlake: a shortest path from where the lake drawn last shows the player, up to 3 moves a
//     turn; on slippery ice 2 moves a turn, each the one most likely to reach the goal,
//     replanned every turn (it wins about 0.4 of slippery lakes: the game allows no more).
//   - guess_number: binary search, each guess's message writing the range it knows
//     ("Range 51-100. <answer>75</answer>").
//
// Config.DirectDemos (env.direct_demos) makes a share of the tasks, chosen by a hash of the
// question, demonstrated imperfectly, so that RL has something to fix: the answer at once,
// without the tool or the worked steps (calc_mult, gsm8k, gsm8k_python, wiki_qa: from the ground
// truth; countdown: the equation without its steps), or a wrong move in a game (frozenlake: a
// first step away from the goal, never into a hole and only where the goal stays in reach;
// guess_number: an off-centre first guess, 37 of 1..100, that binary search still recovers
// from). Imperfect demonstrations still win, so the warm-up keeps them.
//
// # From outside the binary
//
// Tools of MCP servers (package env/mcp) join an environment through Config.ExtraTools; an
// OpenEnv server is an environment (package env/openenv); a reward function run as a command or
// reached over HTTP (package env/extreward) is an ExternalReward in the Rubric, fed the
// TrajectoryRecord JSON. Package env/external opens all three
// from a run's config sections. The single- vs multi-turn rule is IsMultiTurn (detect.go):
// tools or more than one turn make an environment multi-turn.
package env
