// Command logger is the workload of the end-to-end container tests: run
// FROM scratch, it prints "hello-from-$LOGGER_NAME n=<count>" every
// $LOGGER_EVERY (a Go duration, default 200ms); with LOGGER_EVERY=0 it
// prints nothing and waits to be stopped.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	every := 200 * time.Millisecond
	if v := os.Getenv("LOGGER_EVERY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, "logger: LOGGER_EVERY:", err)
			os.Exit(2)
		}
		every = d
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	if every <= 0 {
		<-stop
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-stop:
			return
		case <-t.C:
			fmt.Printf("hello-from-%s n=%d\n", os.Getenv("LOGGER_NAME"), n)
		}
	}
}
