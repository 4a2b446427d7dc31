// Package untrusted makes text that comes from outside the program (a server's error message,
// status line or header, a file name a server lists) safe to print on a terminal or write into a
// log. Such text can carry escape sequences that retitle or clear the terminal, move the cursor
// to overwrite what was printed, or reverse the direction of what follows (Unicode's bidi
// controls), and so show the user an instruction that is not the program's.
//
// Text keeps what prints as itself (letters, digits, punctuation, symbols, the ASCII space) and
// writes everything else as a Go escape (\x1b, \n, \u202e, and \xNN for a byte that is not
// UTF-8): the message stays one line, readable, and says exactly what the server sent. Quote is
// the same guarantee for an excerpt shown in quotes. Every place that prints a server's text goes
// through one of them.
package untrusted
