//go:build !windows

package sitesetup

import "errors"

// Off Windows there is no service manager to set up (Validate asks for
// --no-start); install.sh sets up Linux hosts.
type noServices struct{}

func newServices() services { return noServices{} }

var errNoServices = errors.New("services are registered with the Windows service manager only")

func (noServices) Supervisor(string, []string, bool) (bool, error) { return false, errNoServices }
func (noServices) Updater(string, string, bool) (bool, string, error) {
	return false, "", errNoServices
}
func (noServices) Run(string, bool, bool) (string, error) { return "", errNoServices }
func (noServices) Stop(string) error                      { return errNoServices }
func (noServices) Remove(string, bool) (bool, error)      { return false, errNoServices }
