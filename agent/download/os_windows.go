package download

// Windows cannot fsync a directory handle; NTFS journals the rename itself.
const isWindows = true
