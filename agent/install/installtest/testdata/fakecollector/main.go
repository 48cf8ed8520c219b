// Command fakecollector stands in for otelcol-contrib (and for the updater
// binary) in tests. Its version and behaviour come from a trailer appended
// to its own executable ("\nFAKECOL:<version>:<mode>\n"), so one build
// yields any number of distinct artifacts. Modes: ok; exit1 (`--version`
// fails); crash (runs 150 ms then exits 1); lies (`--version` names its
// version, except with FAKECOL_RUNNING set, as when a started updater
// reports what it runs: then it names 0.0.1-lies).
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func trailer() (version, mode string) {
	exe, err := os.Executable()
	if err != nil {
		return "0.0.0", "ok"
	}
	f, err := os.Open(exe)
	if err != nil {
		return "0.0.0", "ok"
	}
	defer f.Close()
	st, _ := f.Stat()
	n := min(st.Size(), 256)
	f.Seek(st.Size()-n, io.SeekStart)
	b := make([]byte, n)
	io.ReadFull(f, b)
	i := bytes.LastIndex(b, []byte("FAKECOL:"))
	if i < 0 {
		return "0.0.0", "ok"
	}
	parts := strings.Split(strings.TrimSpace(string(b[i+len("FAKECOL:"):])), ":")
	if len(parts) != 2 {
		return "0.0.0", "ok"
	}
	return parts[0], parts[1]
}

func main() {
	version, mode := trailer()
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		if mode == "exit1" {
			fmt.Println("Error: cannot execute binary file")
			os.Exit(1)
		}
		if mode == "lies" && os.Getenv("FAKECOL_RUNNING") != "" {
			version = "0.0.1-lies"
		}
		fmt.Printf("otelcol-contrib version %s\n", version)
		return
	}
	fmt.Printf("fake collector %s started pid %d\n", version, os.Getpid())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	if mode == "crash" {
		select {
		case <-sig:
			return
		case <-time.After(150 * time.Millisecond):
			fmt.Println("fake collector crashing")
			os.Exit(1)
		}
	}
	<-sig
	fmt.Printf("fake collector %s stopping\n", version)
}
