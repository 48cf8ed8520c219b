package main

// It writes one entry under a source of its own, then prints how many
// records the Application log holds and how many come from the source
// named in its argument.

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc/eventlog"
)

var (
	advapi         = windows.NewLazySystemDLL("advapi32.dll")
	openEventLog   = advapi.NewProc("OpenEventLogW")
	readEventLog   = advapi.NewProc("ReadEventLogW")
	countEventLog  = advapi.NewProc("GetNumberOfEventLogRecords")
	closeEventLog  = advapi.NewProc("CloseEventLog")
	sequentialRead = uintptr(0x0001 | 0x0004) // EVENTLOG_SEQUENTIAL_READ | EVENTLOG_FORWARDS_READ
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: eventlogprobe SOURCE")
		os.Exit(2)
	}
	const own = "myriarch-eventlogprobe"
	_ = eventlog.InstallAsEventCreate(own, eventlog.Info) // exists after the first run
	l, err := eventlog.Open(own)
	if err == nil {
		err = l.Info(1, "eventlogprobe wrote this")
		l.Close()
	}
	fmt.Printf("write: %v\n", err)
	name, _ := windows.UTF16PtrFromString("Application")
	h, _, err := openEventLog.Call(0, uintptr(unsafe.Pointer(name)))
	if h == 0 {
		fmt.Printf("open: %v\n", err)
		os.Exit(1)
	}
	defer closeEventLog.Call(h)
	var n uint32
	countEventLog.Call(h, uintptr(unsafe.Pointer(&n)))
	fmt.Printf("records: %d\n", n)
	buf := make([]byte, 64<<10)
	from := 0
	for {
		var read, need uint32
		ok, _, err := readEventLog.Call(h, sequentialRead, 0, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
			uintptr(unsafe.Pointer(&read)), uintptr(unsafe.Pointer(&need)))
		if ok == 0 {
			fmt.Printf("read ends: %v\n", err)
			break
		}
		for off := uint32(0); off+56 <= read; {
			length := *(*uint32)(unsafe.Pointer(&buf[off]))
			if length == 0 {
				break
			}
			// EVENTLOGRECORD: the source name follows the 56-byte header.
			src := windows.UTF16PtrToString((*uint16)(unsafe.Pointer(&buf[off+56])))
			if src == os.Args[1] {
				from++
			}
			off += length
		}
	}
	fmt.Printf("from %s: %d\n", os.Args[1], from)
}
