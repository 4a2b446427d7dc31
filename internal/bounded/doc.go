// Package bounded reads files from outside the program under a cap on their size, so that a
// file that is a stream without end (/dev/zero, a FIFO) or far larger than its kind ever is
// becomes an error naming it, never an exhausted memory. env/data's line reader reports the same
// ErrTooLarge.
package bounded
