// Command fakesupervisor mimics the parts of the OpAMP Supervisor the
// install engine relies on: it runs -exe as its child with output in -log
// (truncated at every start), restarts it after -restart-delay when it
// exits, serves -health (200 while the child runs) and stops the child and
// itself on SIGINT, or when -stopfile appears (Windows has no SIGINT for
// another process).
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	exe := flag.String("exe", "", "collector executable")
	logPath := flag.String("log", "", "agent.log path")
	delay := flag.Duration("restart-delay", 300*time.Millisecond, "restart delay")
	health := flag.String("health", "", "health endpoint listen address")
	stopfile := flag.String("stopfile", "", "stop when this file appears")
	flag.Parse()
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	if *stopfile != "" {
		go func() {
			for {
				if _, err := os.Stat(*stopfile); err == nil {
					sig <- os.Interrupt
					sig <- os.Interrupt // and for the wait between restarts
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	var running atomic.Bool
	if *health != "" {
		go http.ListenAndServe(*health, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if running.Load() {
				fmt.Fprintln(w, "ok")
				return
			}
			http.Error(w, "collector down", http.StatusServiceUnavailable)
		}))
	}
	for {
		out, _ := os.Create(*logPath)
		cmd := exec.Command(*exe)
		cmd.Stdout, cmd.Stderr = out, out
		done := make(chan struct{})
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(out, "start failed: %v\n", err)
			close(done)
		} else {
			running.Store(true)
			go func() { cmd.Wait(); running.Store(false); close(done) }()
		}
		select {
		case <-sig:
			if cmd.Process != nil {
				if cmd.Process.Signal(syscall.SIGTERM) != nil { // Windows: no SIGTERM
					cmd.Process.Kill()
				}
				select {
				case <-done:
				case <-time.After(5 * time.Second):
					cmd.Process.Kill()
					<-done
				}
			}
			out.Close()
			return
		case <-done:
			out.Close()
		}
		select {
		case <-sig:
			return
		case <-time.After(*delay):
		}
	}
}
