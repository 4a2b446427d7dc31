// Command digitagent is the agent program of the learning test through the endpoint: a
// calculator tool loop on the chat completions API (plain HTTP, so that a few hundred episodes
// start in milliseconds each), as scripts/agents/calc_agent.ts plays calc_mult. It reports, on the
// reward route, the share of digits among the characters of the model's final answer: a reward a
// random model's samples spread over (a few percent of its tokens are digits), which GRPO raises
// only if the whole loop through the endpoint points uphill.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

type message struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func post(path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest("POST", os.Getenv("OPENAI_BASE_URL")+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+os.Getenv("OPENAI_API_KEY"))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		return fmt.Errorf("%s: status %d", path, res.StatusCode)
	}
	return json.NewDecoder(res.Body).Decode(out)
}

var product = regexp.MustCompile(`^\s*(\d+)\s*\*\s*(\d+)\s*$`)

// calculator multiplies two numbers, the only expression calc_mult needs.
func calculator(args string) string {
	var a struct {
		Expression string `json:"expression"`
	}
	if json.Unmarshal([]byte(args), &a) != nil {
		return "Error: arguments are not JSON"
	}
	m := product.FindStringSubmatch(a.Expression)
	if m == nil {
		return "Error: only a * b is supported"
	}
	x, _ := strconv.Atoi(m[1])
	y, _ := strconv.Atoi(m[2])
	return strconv.Itoa(x * y)
}

func run() error {
	var in struct {
		Messages []message        `json:"messages"`
		Tools    []map[string]any `json:"tools"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		return err
	}
	msgs, answer := in.Messages, ""
	for range 3 {
		var out struct {
			Choices []struct {
				Message message `json:"message"`
			} `json:"choices"`
		}
		if err := post("/chat/completions", map[string]any{"model": "policy", "messages": msgs, "tools": in.Tools, "max_tokens": 12}, &out); err != nil {
			return err
		}
		reply := out.Choices[0].Message
		msgs = append(msgs, reply)
		if reply.Content != nil {
			answer = *reply.Content
		}
		if len(reply.ToolCalls) == 0 {
			break
		}
		for _, c := range reply.ToolCalls {
			result := calculator(c.Function.Arguments)
			msgs = append(msgs, message{Role: "tool", ToolCallID: c.ID, Content: &result})
		}
	}
	digits, all := 0, 0
	for _, r := range strings.TrimSpace(answer) {
		all++
		if unicode.IsDigit(r) && r < 128 {
			digits++
		}
	}
	share := 0.0
	if all > 0 {
		share = float64(digits) / float64(all)
	}
	var ok map[string]any
	return post("/mtgrpo/reward", map[string]any{"reward": share}, &ok)
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "digitagent:", err)
		os.Exit(1)
	}
}
