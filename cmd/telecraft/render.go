package main

import (
	"fmt"
	"io"
)

// runRender is replaced by the Blueprint work (issue 10).
func runRender(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "telecraft render: not built yet")
	return 2
}
