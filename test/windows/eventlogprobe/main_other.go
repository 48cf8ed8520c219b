//go:build !windows

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "eventlogprobe reads the Windows event log; build it for Windows")
	os.Exit(2)
}
