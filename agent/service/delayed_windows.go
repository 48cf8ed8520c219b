package service

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc/mgr"
)

// delayStart makes the installed service start delayed after boot, once
// the network is up. A manager without that setting (ERROR_INVALID_LEVEL:
// Wine's) keeps plain automatic start, which the warning says.
func delayStart() (warning string, err error) {
	m, err := mgr.Connect()
	if err != nil {
		return "", err
	}
	defer m.Disconnect()
	// A manager may show a service it just created a moment later (Wine's
	// does, for up to a few seconds).
	var s *mgr.Service
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		s, err = m.OpenService(Name)
		if err == nil || !errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST) || time.Now().After(deadline) {
			break
		}
	}
	if errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST) {
		// Created, but not shown yet to another handle (Wine's manager
		// within one session): installed, without the delay.
		return "the service manager does not show the new service yet; it starts automatically at boot, without the delay", nil
	}
	if err != nil {
		return "", err
	}
	defer s.Close()
	info := windows.SERVICE_DELAYED_AUTO_START_INFO{IsDelayedAutoStartUp: 1}
	err = windows.ChangeServiceConfig2(s.Handle, windows.SERVICE_CONFIG_DELAYED_AUTO_START_INFO, (*byte)(unsafe.Pointer(&info)))
	switch {
	case errors.Is(err, windows.ERROR_INVALID_LEVEL):
		return "the service manager refuses delayed automatic start; the service starts automatically at boot", nil
	case err != nil:
		return "", fmt.Errorf("delayed automatic start: %w", err)
	}
	return "", nil
}
