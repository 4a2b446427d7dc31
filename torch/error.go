package torch

import "fmt"

// Error is a failed torch operation: the op that failed and libtorch's message.
//
// Ops panic with *Error (so model code reads as math, not as error plumbing); API boundaries turn
// the panic back into an error with a deferred Recover or with Do. Run does it for its closure.
type Error struct {
	Op     string // the Go-side operation, e.g. "matmul"
	Msg    string // the first line of the message
	Detail string // the whole message from libtorch
}

func (e *Error) Error() string { return "torch: " + e.Op + ": " + e.Msg }

// errorf panics with an *Error made on the Go side (bad arguments caught before the crossing).
func errorf(op, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	panic(&Error{Op: op, Msg: msg, Detail: msg})
}

// Recover, deferred, turns a panic with *Error into *err; other panics continue.
//
//	func (m *Model) Load(path string) (err error) {
//		defer torch.Recover(&err)
//		...
//	}
func Recover(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if e, ok := r.(*Error); ok {
		*err = e
		return
	}
	panic(r)
}

// Do runs fn and returns its error, or the *Error a torch op panicked with.
func Do(fn func() error) (err error) {
	defer Recover(&err)
	return fn()
}
