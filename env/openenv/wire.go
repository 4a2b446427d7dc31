package openenv

import (
	"encoding/json"
	"fmt"

	"github.com/mtgrpo/mtgrpo/internal/untrusted"
)

// The wire format, as OpenEnv's server defines it (src/openenv/core/env_server/types.py):
//
//	POST /reset  {"seed": 7, "episode_id": "…", …}          → result
//	POST /step   {"action": {"message": "…"}}                → result
//	result       {"observation": {…}, "reward": 1.0 | null, "done": false}
//
//	GET /ws, then text messages:
//	  → {"type": "reset", "data": {"seed": 7, …}}            ← {"type": "observation", "data": result}
//	  → {"type": "step", "data": {"message": "…"}}           ← {"type": "observation", "data": result}
//	  → {"type": "close"}
//	  ← {"type": "error", "data": {"message": "…", "code": "CAPACITY_REACHED" | …}}

// result is a reset or step answer (ResetResponse, StepResponse, WSObservationResponse.data).
type result struct {
	Observation map[string]json.RawMessage `json:"observation"`
	Reward      *float64                   `json:"reward"`
	Done        bool                       `json:"done"`
}

// wsMessage is a WebSocket message in either direction.
type wsMessage struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data,omitempty"`
}

// wsError is the data of a {"type": "error"} message (WSErrorResponse).
type wsError struct {
	Message string `json:"message"`
	Code    string `json:"code"`
}

// Error codes of OpenEnv's WebSocket errors that a new session may cure.
const (
	codeCapacity = "CAPACITY_REACHED"
	codeFactory  = "FACTORY_ERROR"
)

// serverError is an error the server answered with (an HTTP status, a WebSocket error message).
type serverError struct {
	status int    // HTTP status, 0 over WebSocket
	code   string // WebSocket error code
	msg    string
}

func (e *serverError) Error() string {
	if e.status != 0 {
		return fmt.Sprintf("HTTP %d: %s", e.status, e.msg)
	}
	return fmt.Sprintf("%s (code %s)", e.msg, e.code)
}

// retryable says whether a reset that failed with err may succeed on a new try: no answer at all,
// a 5xx, a server at capacity or whose environment factory failed.
func retryable(err error) bool {
	se, ok := err.(*serverError)
	if !ok {
		return true
	}
	return se.status >= 500 || se.code == codeCapacity || se.code == codeFactory ||
		(se.status == 0 && se.code == "EXECUTION_ERROR")
}

// parseResult decodes an answer, naming what is wrong with it.
func parseResult(raw []byte) (result, error) {
	var r result
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, fmt.Errorf("malformed answer (%v): %s", err, excerpt(raw))
	}
	if r.Observation == nil {
		return r, fmt.Errorf("the answer has no \"observation\" object: %s", excerpt(raw))
	}
	return r, nil
}

// excerpt shows the start of what a server answered (package untrusted: escaped, quoted).
func excerpt(b []byte) string { return untrusted.Quote(b, 200) }
