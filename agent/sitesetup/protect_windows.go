package sitesetup

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// onlySystemAndAdmins is the access list of a file holding the token: full
// control for SYSTEM and the Administrators, nothing inherited.
const onlySystemAndAdmins = "D:P(A;;FA;;;SY)(A;;FA;;;BA)"

// protect restricts path to SYSTEM and Administrators.
func protect(path string) error {
	sd, err := windows.SecurityDescriptorFromString(onlySystemAndAdmins)
	if err != nil {
		return err
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return err
	}
	if err := windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil); err != nil {
		return fmt.Errorf("restricting %s to SYSTEM and Administrators: %w", path, err)
	}
	return nil
}

// protected says whether path's access list is protected (nothing
// inherited) and grants only SYSTEM and Administrators.
func protected(path string) bool {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return false
	}
	control, _, err := sd.Control()
	if err != nil || control&windows.SE_DACL_PROTECTED == 0 {
		return false
	}
	dacl, _, err := sd.DACL()
	if err != nil || dacl == nil {
		return false
	}
	system, _ := windows.CreateWellKnownSid(windows.WinLocalSystemSid)
	admins, _ := windows.CreateWellKnownSid(windows.WinBuiltinAdministratorsSid)
	for i := range uint32(dacl.AceCount) {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			return false
		}
		sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
		if !sid.Equals(system) && !sid.Equals(admins) {
			return false
		}
	}
	return true
}
