//go:build windows

// Command scmquery prints, as JSON, how the service control manager has a
// service configured: start type, its command line, its
// failure actions and whether a non-zero exit counts as a failure. The
// Windows tests run it under Wine beside the updater they installed.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc/mgr"
)

type action struct {
	Type    int     `json:"type"`
	DelayMS float64 `json:"delayMs"`
}

type config struct {
	StartType      uint32   `json:"startType"`
	BinaryPathName string   `json:"binaryPathName"`
	Actions        []action `json:"actions"`
	ActionsErr     string   `json:"actionsError,omitempty"`
	ResetPeriodS   uint32   `json:"resetPeriodS"`
	NonCrash       bool     `json:"nonCrashFailures"`
	NonCrashErr    string   `json:"nonCrashError,omitempty"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: scmquery SERVICE")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "scmquery:", err)
		os.Exit(1)
	}
}

func run(name string) error {
	m, err := mgr.Connect()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	s, err := m.OpenService(name)
	if err != nil {
		return err
	}
	defer s.Close()
	// QueryServiceConfig alone: mgr's Config also asks for the delayed
	// start info level, which Wine's SCM refuses.
	var need uint32
	buf := make([]byte, 8192)
	qc := (*windows.QUERY_SERVICE_CONFIG)(unsafe.Pointer(&buf[0]))
	if err := windows.QueryServiceConfig(s.Handle, qc, uint32(len(buf)), &need); err != nil {
		return fmt.Errorf("QueryServiceConfig: %w", err)
	}
	out := config{StartType: qc.StartType, BinaryPathName: windows.UTF16PtrToString(qc.BinaryPathName)}
	// Wine's SCM keeps failure actions but cannot be asked for them: the
	// error is printed for the test to name.
	if acts, err := s.RecoveryActions(); err != nil {
		out.ActionsErr = err.Error()
	} else {
		for _, a := range acts {
			out.Actions = append(out.Actions, action{Type: a.Type, DelayMS: float64(a.Delay.Milliseconds())})
		}
		if out.ResetPeriodS, err = s.ResetPeriod(); err != nil {
			return fmt.Errorf("reset period: %w", err)
		}
	}
	if out.NonCrash, err = s.RecoveryActionsOnNonCrashFailures(); err != nil {
		out.NonCrashErr = err.Error()
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
