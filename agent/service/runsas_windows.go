package service

import "golang.org/x/sys/windows/svc"

// runsAsService reports whether the SCM started this process: the
// installed service passes --service (byManager); a service installed
// before it did is recognised as Windows does (its parent is services.exe
// in the non-interactive services session, which Wine's is not).
func runsAsService(byManager bool) (bool, error) {
	if byManager {
		return true, nil
	}
	return svc.IsWindowsService()
}
