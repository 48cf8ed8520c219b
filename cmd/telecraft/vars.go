package main

import (
	"fmt"
	"io"
)

// runVars is replaced by the variable-substitution work (issue 9).
func runVars(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "telecraft vars: not built yet")
	return 2
}
